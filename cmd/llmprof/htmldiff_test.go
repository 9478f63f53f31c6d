package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/browser"
)

// TestDiffHTML: `diff --out html=…` writes an offline page whose forest plot
// has a dot for each metric of the table and the gate's threshold ticks, the
// failed rule named, and explanation bars; in a browser it renders without
// errors.
func TestDiffHTML(t *testing.T) {
	fx := newFixtures(t)
	out := filepath.Join(fx.dir, "diff.html")
	code, _, stderr := runLLMProf(t, "diff", fast, fx.base, fx.slow, "--gate", "tpot.p50<+5%", "--gate", "ttft.p99<+200%", "--out", "html="+out)
	if code != ExitRegression {
		t.Fatalf("exit %d, want %d: %s", code, ExitRegression, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	browser.SVGCharts(t, page)
	text := string(page)
	rows := strings.Count(text[strings.Index(text, `<section id="forest"`):], `<tr><th scope="row"`)
	if dots := strings.Count(text, "<circle"); dots == 0 || dots > rows {
		t.Errorf("%d dots in the forest plot for %d metric rows", dots, rows)
	}
	if n := strings.Count(text, `stroke-dasharray="3 2"`); n != 2 {
		t.Errorf("%d threshold ticks, want one per rule (2)", n)
	}
	for _, want := range []string{"tpot.p50 &lt; +5%", ">fail<", `aria-label="tpot.p50 explanation"`, "gate fail"} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if s := strings.ReplaceAll(text, `xmlns="http://www.w3.org/2000/svg"`, ""); strings.Contains(s, "http://") || strings.Contains(s, "https://") {
		t.Error("the page refers to the network")
	}
	browser.RenderedCleanly(t, out, "the diff page")
}
