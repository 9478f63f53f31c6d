package driver

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/llmprof/llmprof/internal/golden"
	"github.com/llmprof/llmprof/report"
)

// TestAnalyzeDemoFitsWidth renders testdata/demo at 80 and 120 columns
// (what analyze and tenants get from $COLUMNS or the terminal): no line of
// analyze's report or of tenants' is wider than the terminal, so none
// wraps, and analyze's layout is kept as golden files.
func TestAnalyzeDemoFitsWidth(t *testing.T) {
	a := run(t, Options{}, demoDir)
	rep := a.Report(testVersion)
	for _, width := range []int{80, 120} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			var text, tenants strings.Builder
			if err := rep.WriteText(&text, report.TextOptions{Width: width}); err != nil {
				t.Fatal(err)
			}
			if err := report.WriteTenantsText(&tenants, a.Tenants, a.TenantsNote, report.TextOptions{Width: width}); err != nil {
				t.Fatal(err)
			}
			for name, out := range map[string]string{"analyze": text.String(), "tenants": tenants.String()} {
				long := 0
				for i, l := range strings.Split(out, "\n") {
					if w := ansi.StringWidth(l); w > width {
						t.Errorf("%s: line %d is %d cells wide, over %d: %q", name, i+1, w, width, l)
					}
					long = max(long, ansi.StringWidth(l))
				}
				if long < width/2 {
					t.Errorf("%s: widest line %d cells: nothing was printed to fit", name, long)
				}
			}
			golden.Check(t, filepath.Join("testdata", fmt.Sprintf("analyze-demo-%d.txt", width)), []byte(text.String()))
		})
	}
}

// TestTopKernels: TopKernels N (analyze --top N) lists N kernels.
func TestTopKernels(t *testing.T) {
	stdout := analyzeText(t, 120, Options{TopKernels: 3}, demoDir)
	_, after, ok := strings.Cut(stdout, "top kernels")
	if !ok {
		t.Fatal("no top kernels table")
	}
	block, _, _ := strings.Cut(after, "longest idle gaps")
	if n := strings.Count(strings.TrimSpace(block), "\n"); n != 3 {
		t.Errorf("%d kernel rows with --top 3:\n%s", n, block)
	}
}
