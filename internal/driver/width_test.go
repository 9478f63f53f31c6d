package driver

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/llmprof/llmprof/internal/golden"
)

// TestAnalyzeDemoFitsWidth renders testdata/demo at 80 and 120 columns
// (what analyze gets from $COLUMNS or the terminal): no line is wider than the terminal, so none wraps, and the
// layout is kept as golden files.
func TestAnalyzeDemoFitsWidth(t *testing.T) {
	for _, width := range []int{80, 120} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			stdout := analyzeText(t, width, Options{}, demoDir)
			for i, l := range strings.Split(stdout, "\n") {
				if w := ansi.StringWidth(l); w > width {
					t.Errorf("line %d is %d cells wide, over %d: %q", i+1, w, width, l)
				}
			}
			golden.Check(t, filepath.Join("testdata", fmt.Sprintf("analyze-demo-%d.txt", width)), []byte(stdout))
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
