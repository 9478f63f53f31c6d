package driver

import (
	"bytes"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/report"
	"github.com/llmprof/llmprof/synth"
)

// longNamesRun is a simulated run whose tenant, model and most frequent
// kernel have names of 200 kB each (issue 31: a 200 kB name repeated 121
// times made a 74 MB page).
func longNamesRun(t *testing.T) (*Result, map[string]string) {
	t.Helper()
	names := map[string]string{
		"tenant": "tenant-" + strings.Repeat("t", 200_000),
		"model":  "model-" + strings.Repeat("m", 200_000),
		"kernel": "void kernel_" + strings.Repeat("k", 200_000) + "<float>(float*, int)",
	}
	cfg := synth.DefaultConfig(1, 4*time.Second)
	cfg.Tenants[2].Name = names["tenant"]
	cfg.Tenants[2].Model = names["model"]
	cfg.Models[1].Name = names["model"]
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := range run.Ops {
		counts[run.OpName(&run.Ops[i])]++
	}
	top := ""
	for n, c := range counts {
		if c > counts[top] || c == counts[top] && n < top {
			top = n
		}
	}
	for i, n := range run.OpNames {
		if n == top {
			run.OpNames[i] = names["kernel"]
		}
	}
	tr := synthtrace.WithGPU(t, run, true)
	a := &Result{Trace: tr, Attr: attribution.Analyze(tr, attribution.Options{})}
	a.Tenants, a.TenantsNote, err = tenantRegression(tr, a.Attr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a, names
}

// Names of 200 kB print shortened wherever they appear, in full once at
// the end: the HTML stays the size of an ordinary report plus each long
// name once, and so does the text.
func TestLongNamesBounded(t *testing.T) {
	a, names := longNamesRun(t)
	rep := a.Report(testVersion)
	var page, text, wrapped bytes.Buffer
	if err := rep.WriteHTML(&page, a.HTMLViews(rep)); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(&text, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(&wrapped, report.TextOptions{Width: 120}); err != nil {
		t.Fatal(err)
	}
	full := 0
	for kind, name := range names {
		// The name's longest run of non-space characters: what is
		// shortened and listed.
		long := ""
		for _, f := range strings.Fields(name) {
			f = strings.TrimRight(f, ",")
			if len(f) > len(long) {
				long = f
			}
		}
		full += len(html.EscapeString(long))
		inPage, inText := strings.Count(page.String(), html.EscapeString(long)), strings.Count(text.String(), long)
		t.Logf("%s: %d in full in the HTML, %d in the text", kind, inPage, inText)
		if inPage != 1 || inText != 1 {
			t.Errorf("the %s's 200 kB name is in full %d times in the HTML and %d in the text, want once each", kind, inPage, inText)
		}
	}
	t.Logf("HTML %d bytes (%d of them the full names), text %d bytes (%d wrapped at 120 columns)", page.Len(), full, text.Len(), wrapped.Len())
	// An ordinary report of this run is under 1 MiB (TestAnalyzeHTMLDemo
	// allows 2 MiB for the demo's).
	if page.Len()-full > 2<<20 {
		t.Errorf("the page is %d bytes besides the full names", page.Len()-full)
	}
	if text.Len() > full+256<<10 || wrapped.Len() > 2*full+256<<10 {
		t.Errorf("text %d bytes (wrapped %d) for %d bytes of full names", text.Len(), wrapped.Len(), full)
	}
	if !strings.Contains(page.String(), `<section id="full-names"><h2>Full names</h2><p class="dim">3 names`) || !strings.Contains(text.String(), "FULL NAMES  3 names shortened above") {
		t.Error("no list of the full names")
	}
}
