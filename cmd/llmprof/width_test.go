package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestDiffFitsColumns: $COLUMNS reaches the renderer, and diff's text of
// two fixture runs fits it (analyze's and tenants' reports fitting a width
// is internal/driver's TestAnalyzeDemoFitsWidth).
func TestDiffFitsColumns(t *testing.T) {
	const width = 80
	t.Setenv("COLUMNS", fmt.Sprint(width))
	fx := newFixtures(t)
	for name, args := range map[string][]string{
		"diff": {"diff", fast, fx.base, fx.slow},
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
