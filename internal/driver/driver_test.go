package driver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/llmprof/llmprof/report"
)

// demoDir is the committed demo run (cmd/llmprof's TestDemoFixtureUpToDate
// keeps it what `llmprof demo` writes).
var demoDir = filepath.Join("..", "..", "testdata", "demo")

// demoDefault is the analysis of the demo run with analyze's defaults,
// shared by the tests that read it (run).
var demoDefault struct {
	sync.Once
	a   *Result
	err error
}

// testVersion stamps the reports of these tests; no golden shows it.
const testVersion = "(test)"

// run takes the inputs through the pipeline and fails the test on error.
// The demo run with analyze's defaults, which eight tests read, is analysed
// once (demoDefault); the tests only render it, and TestAnalyzeIsDeterministic
// checks with fresh runs that a second analysis would be the same.
func run(t *testing.T, opts Options, paths ...string) *Result {
	t.Helper()
	if len(paths) == 1 && paths[0] == demoDir && reflect.ValueOf(opts).IsZero() {
		demoDefault.Do(func() { demoDefault.a, demoDefault.err = Run(context.Background(), paths, opts) })
		if demoDefault.err != nil {
			t.Fatal(demoDefault.err)
		}
		return demoDefault.a
	}
	a, err := Run(context.Background(), paths, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// analyzeText is the report `llmprof analyze` prints for the inputs,
// without colour, fitted to width columns (0: no limit).
func analyzeText(t *testing.T, width int, opts Options, paths ...string) string {
	t.Helper()
	var b bytes.Buffer
	if err := run(t, opts, paths...).Report(testVersion).WriteText(&b, report.TextOptions{Width: width}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// analyzeJSON is `llmprof analyze --format json` of the inputs.
func analyzeJSON(t *testing.T, paths ...string) string {
	t.Helper()
	var b bytes.Buffer
	if err := run(t, Options{}, paths...).Report(testVersion).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// writeFile writes b to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// renderAll is the run's report as analyze renders it as text (no colour,
// no width), Markdown and HTML.
func renderAll(t *testing.T, a *Result) (text, md, html string) {
	t.Helper()
	rep := a.Report(testVersion)
	var tb, mb, hb strings.Builder
	if err := rep.WriteText(&tb, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&mb); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteHTML(&hb, a.HTMLViews(rep)); err != nil {
		t.Fatal(err)
	}
	return tb.String(), mb.String(), hb.String()
}
