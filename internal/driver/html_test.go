package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/internal/browser"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/synth"
)

// analyzeDemoHTML writes `analyze --format html` of testdata/demo and returns
// its path and bytes.
func analyzeDemoHTML(t *testing.T) (string, []byte) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report.html")
	return out, writeHTML(t, out, demoDir)
}

// writeHTML writes `analyze --format html` of the inputs to out and returns
// the page.
func writeHTML(t *testing.T, out string, paths ...string) []byte {
	t.Helper()
	a := run(t, Options{}, paths...)
	rep := a.Report(testVersion)
	var b bytes.Buffer
	if err := rep.WriteHTML(&b, a.HTMLViews(rep)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestAnalyzeHTMLDemo checks the page without a browser: it is small, loads
// nothing from the network, every chart is well-formed SVG, and it holds
// what the report holds (full kernel names, every section of the demo).
func TestAnalyzeHTMLDemo(t *testing.T) {
	_, page := analyzeDemoHTML(t)
	if len(page) > 2<<20 {
		t.Errorf("report is %d bytes, want under 2 MiB", len(page))
	}
	// Offline: no external resource of any kind. The SVG namespace is a
	// name, not a fetch.
	stripped := strings.ReplaceAll(string(page), `xmlns="http://www.w3.org/2000/svg"`, "")
	if !strings.Contains(string(page), `<meta http-equiv="Content-Security-Policy" content="default-src 'none';`) {
		t.Error("the page has no Content-Security-Policy that denies loading by default")
	}
	for _, bad := range []string{"http://", "https://", "<link", "src="} {
		if strings.Contains(stripped, bad) {
			t.Errorf("page contains %q: it must open offline", bad)
		}
	}
	svgs := browser.SVGCharts(t, page)
	if len(svgs) < 15 {
		t.Errorf("%d charts, want at least 15 (CDFs, time series, stages, GPU, tokens, tenants, KV)", len(svgs))
	}
	for _, id := range []string{"findings", "latency", "stages", "tokens", "stalls", "gpu", "tenants", "kv-cache", "blind-spots", "model-lifecycle", "alignment", "warnings"} {
		if !bytes.Contains(page, []byte(`<section id="`+id+`"`)) {
			t.Errorf("no %q section", id)
		}
	}
	if !bytes.Contains(page, []byte(`<h3 id="over-time">`)) {
		t.Error("no over-time part in the latency section")
	}
	for _, label := range []string{"TTFT distribution by tenant", "TPOT distribution by model", "E2E distribution by tenant",
		"TTFT over time", "Queue time over time", "Where the time went", "GPU busy/idle timeline", "Kernel categories",
		"Per-token buckets by position", "Tenant activity heat map", "KV cache hits and misses"} {
		if !bytes.Contains(page, []byte(`aria-label="`+label+`"`)) {
			t.Errorf("no chart %q", label)
		}
	}
	// The top-kernels table has the full names the JSON report has (the
	// terminal cuts them).
	js := analyzeJSON(t, demoDir)
	var rep struct {
		GPU struct {
			TopKernels []struct{ Name string } `json:"top_kernels"`
		} `json:"gpu"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.GPU.TopKernels) == 0 {
		t.Fatal("the demo report has no top kernels")
	}
	for _, k := range rep.GPU.TopKernels {
		if !strings.Contains(string(page), html.EscapeString(k.Name)) {
			t.Errorf("kernel %q is not in the page under its full name", k.Name)
		}
	}
}

// kernelColumn returns one column of the top-kernels table as the DOM has
// it, in row order.
func kernelColumn(t *testing.T, dom string, col int) []string {
	t.Helper()
	i := strings.Index(dom, `<table class="kernels sortable">`)
	if i < 0 {
		t.Fatal("no top-kernels table in the DOM")
	}
	body := dom[i:]
	body = body[:strings.Index(body, "</table>")]
	var out []string
	for _, row := range regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(body, -1)[1:] {
		cells := regexp.MustCompile(`(?s)<t[hd][^>]*>(.*?)</t[hd]>`).FindAllStringSubmatch(row[1], -1)
		if col < len(cells) {
			out = append(out, html.UnescapeString(cells[col][1]))
		}
	}
	return out
}

// TestAnalyzeHTMLInBrowser loads the demo report in headless Chromium: the
// page's script ran to its end (data-rendered), counted every chart in the
// rendered DOM, recorded no error, and the console is silent. It also takes
// a screenshot, with the kernels sorted by the clicks below
// ($LLMPROF_SCREENSHOT_DIR keeps it; scripts/html-screenshot.sh takes one of
// the page as it opens). One start of the browser for all of it, about
// 0.65 s of CPU (2.6–3 s on a guest where process starts are dear).
func TestAnalyzeHTMLInBrowser(t *testing.T) {
	bin, err := browser.Find()
	if err != nil {
		t.Skip("browser test skipped: ", err)
	}
	_, page := analyzeDemoHTML(t)
	// Sorting: after the page's own script, a script clicks the
	// top-kernels table's "count" header once (descending) and keeps the
	// table so sorted in a <template>, then clicks the "kernel" header
	// (descending by name). The layout check runs after it (it reads the
	// charts, which the clicks leave alone), and the screenshot is of the
	// page so sorted.
	const click = `<script>
var th = function(n) { return document.querySelector("table.kernels thead th:nth-child(" + n + ")"); };
th(3).click();
var kept = document.createElement("template");
kept.id = "sorted-by-count";
kept.innerHTML = document.querySelector("table.kernels").outerHTML;
document.body.append(kept);
th(1).click();
</script></body>`
	dir := os.Getenv("LLMPROF_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	png := filepath.Join(dir, "analyze-demo.png")
	sorted := bytes.Replace(page, []byte("</body>"), []byte(click), 1)
	sp, lay, err := browser.LoadWithLayout(context.Background(), bin, sorted, t.TempDir(), &browser.Screenshot{Path: png, Width: 1280, Height: 2400})
	if err != nil {
		t.Fatal(err)
	}
	attr := func(name string) string { return browser.HTMLAttr(sp.DOM, name) }
	if attr("data-rendered") != "true" {
		t.Fatalf("the page's script did not finish (no data-rendered on <html>); log:\n%s", sp.Log)
	}
	if n := attr("data-errors"); n != "" {
		t.Errorf("the page recorded %s error(s)", n)
	}
	if msgs := sp.ConsoleMessages(); len(msgs) > 0 {
		t.Errorf("the page logged to the console:\n%s", strings.Join(msgs, "\n"))
	}
	want := len(browser.SVGCharts(t, page))
	got, _ := strconv.Atoi(attr("data-charts"))
	if got != want || got == 0 {
		t.Errorf("the browser found %d charts, the page has %d", got, want)
	}
	if n := strings.Count(sp.DOM, "<svg"); n != want {
		t.Errorf("rendered DOM has %d <svg> elements, want %d", n, want)
	}
	t.Logf("script done %s ms after navigation start", attr("data-render-ms"))

	// Layout: no two texts of a chart overlap (heat-map headers included),
	// and no legend draws two entries alike (the per-token buckets).
	for _, o := range lay.Overlaps {
		t.Errorf("overlapping text: %s", o)
	}
	for _, c := range lay.SameColours {
		t.Errorf("two legend entries drawn alike: %s", c)
	}

	byCount := strings.Index(sp.DOM, `<template id="sorted-by-count">`)
	if byCount < 0 {
		t.Fatalf("the click script did not run; log:\n%s", sp.Log)
	}
	for _, tc := range []struct {
		col     int
		numeric bool
		dom     string // the DOM holding the table so sorted, first
	}{{2, true, sp.DOM[byCount:]}, {0, false, sp.DOM[:byCount]}} {
		cells := kernelColumn(t, tc.dom, tc.col)
		ok := slices.IsSortedFunc(cells, func(a, b string) int {
			if tc.numeric {
				x, _ := strconv.Atoi(strings.ReplaceAll(a, ",", ""))
				y, _ := strconv.Atoi(strings.ReplaceAll(b, ",", ""))
				return y - x
			}
			return strings.Compare(b, a)
		})
		if !ok || len(cells) < 2 {
			t.Errorf("column %d after a click is not in descending order: %q", tc.col, cells)
		}
		if !strings.Contains(tc.dom, `aria-sort="descending"`) {
			t.Error("the clicked header is not marked aria-sort=descending")
		}
	}

	b, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 20_000 {
		t.Errorf("screenshot %s is not a PNG of a drawn page (%d bytes)", png, len(b))
	}
}

// TestAnalyzeHTMLTenMinutes: the report of a 10-minute demo run (13,000
// requests, 1.4 M tokens) stays under 2 MiB, and loads in the browser when
// there is one. Long: the run takes half a minute to write and read.
func TestAnalyzeHTMLTenMinutes(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("set LLMPROF_LONG=1 to write and analyze a 10-minute demo run")
	}
	// What `llmprof demo --duration 10m` writes (cmd/llmprof/demo.go).
	cfg := synth.DemoConfig(1, 10*time.Minute)
	cfg.GPUClock = synth.ClockError{OffsetNs: 1_734_000_000, DriftPPM: 35, JitterNs: 20_000}
	sr, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var trace bytes.Buffer
	if err := sr.WriteOTLP(&trace, synth.StyleLLM, synth.JSONLines); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "trace.otlp.jsonl", trace.Bytes())
	from := cfg.Start + (10*time.Minute).Nanoseconds()/3
	if err := nsys.WriteSQLite(filepath.Join(dir, "gpu.nsys.sqlite"), sr.GPUTraceWindow(from, from+(3*time.Second).Nanoseconds()), nsys.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	writeHTML(t, out, dir)
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 2<<20 {
		t.Errorf("10-minute report is %d bytes, want under 2 MiB", st.Size())
	}
	t.Logf("10-minute report: %d bytes", st.Size())
	browser.RenderedCleanly(t, out, "the 10-minute report")
}

// TestAnalyzeHTMLNoRequests: an input without request spans still gives a
// page, which says why there are no latency charts.
func TestAnalyzeHTMLNoRequests(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "spans.json", []byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"web"}}]},`+
		`"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"GET /","kind":2,`+
		`"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000100000000"}]}]}]}`))
	page := writeHTML(t, filepath.Join(dir, "r.html"), in)
	if !bytes.Contains(page, []byte("No request spans in the input")) || !bytes.Contains(page, []byte(`<section id="warnings"`)) {
		t.Errorf("page does not explain the missing requests:\n%.2000s", page)
	}
}
