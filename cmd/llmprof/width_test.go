package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/llmprof/llmprof/internal/golden"
)

// TestAnalyzeDemoFitsWidth renders testdata/demo at 80 and 120 columns
// ($COLUMNS): no line is wider than the terminal, so none wraps, and the
// layout is kept as golden files.
func TestAnalyzeDemoFitsWidth(t *testing.T) {
	for _, width := range []int{80, 120} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			t.Setenv("COLUMNS", fmt.Sprint(width))
			code, stdout, stderr := runLLMProf(t, "analyze", filepath.Join("..", "..", "testdata", "demo"))
			if code != ExitOK {
				t.Fatalf("analyze exited %d: %s", code, stderr)
			}
			for i, l := range strings.Split(stdout, "\n") {
				if w := ansi.StringWidth(l); w > width {
					t.Errorf("line %d is %d cells wide, over %d: %q", i+1, w, width, l)
				}
			}
			golden.Check(t, filepath.Join("testdata", fmt.Sprintf("analyze-demo-%d.txt", width)), []byte(stdout))
		})
	}
}

// TestTopKernels: --top N lists N kernels.
func TestTopKernels(t *testing.T) {
	t.Setenv("COLUMNS", "120")
	code, stdout, stderr := runLLMProf(t, "analyze", "--top", "3", filepath.Join("..", "..", "testdata", "demo"))
	if code != ExitOK {
		t.Fatalf("analyze exited %d: %s", code, stderr)
	}
	_, after, ok := strings.Cut(stdout, "top kernels")
	if !ok {
		t.Fatal("no top kernels table")
	}
	block, _, _ := strings.Cut(after, "longest idle gaps")
	if n := strings.Count(strings.TrimSpace(block), "\n"); n != 3 {
		t.Errorf("%d kernel rows with --top 3:\n%s", n, block)
	}
}

// TestDiffAndTenantsFitWidth: diff's and tenants' text fit $COLUMNS like
// analyze's report (the demo run's tenants; diff of two fixture runs).
func TestDiffAndTenantsFitWidth(t *testing.T) {
	const width = 80
	t.Setenv("COLUMNS", fmt.Sprint(width))
	fx := newFixtures(t)
	for name, args := range map[string][]string{
		"tenants": {"tenants", filepath.Join("..", "..", "testdata", "demo")},
		"diff":    {"diff", fast, fx.base, fx.slow},
	} {
		code, stdout, stderr := runLLMProf(t, args...)
		if code != ExitOK && code != ExitRegression {
			t.Fatalf("%s exited %d: %s", name, code, stderr)
		}
		long := 0
		for _, l := range strings.Split(stdout, "\n") {
			if w := ansi.StringWidth(l); w > width {
				t.Errorf("%s: a line is %d cells wide, over %d: %q", name, w, width, l)
			}
			long = max(long, ansi.StringWidth(l))
		}
		if long < width/2 {
			t.Errorf("%s: widest line %d cells: nothing was printed to fit", name, long)
		}
	}
}
