package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/report"
)

// slowest is the worked example of docs/architecture.md ("A new
// analysis"): a row of the analyses registry that finds the slowest
// request, computed from attribution's result and shown by every renderer
// through its section. A real analysis's Run calls its own package.
var slowest = Analysis{
	Name: "slowest",
	Skip: func(o Options) bool { return o.RequestsOnly },
	Run: func(a *Result, _ Options) error {
		if len(a.Attr.Requests) == 0 {
			return nil
		}
		worst := &a.Attr.Requests[0]
		for i := range a.Attr.Requests {
			if r := &a.Attr.Requests[i]; r.E2E > worst.E2E {
				worst = r
			}
		}
		id, tenant := a.Attr.ID(worst), a.Attr.Tenant(worst)
		a.AddSection(report.AnalysisSection{
			ID: "slowest", Title: "Slowest request",
			Result: map[string]any{"id": id, "tenant": tenant, "e2e_ms": worst.E2E / 1e6},
			Text: func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "  %s (tenant %s): %.1f ms end to end\n", id, tenant, worst.E2E/1e6)
				return err
			},
		})
		return nil
	},
}

// TestAnalysisRegistry: a row added to the registry runs after attribution,
// and its result reaches the JSON report and its section the text,
// Markdown and HTML reports; under options that skip it, nothing of it
// does.
func TestAnalysisRegistry(t *testing.T) {
	saved := analyses
	analyses = append(append([]Analysis{}, analyses...), slowest)
	t.Cleanup(func() { analyses = saved })
	opts := Options{Tenants: TenantOptions{Skip: true}}
	a := run(t, opts, filepath.Join(demoDir, "trace.otlp.jsonl.gz"))
	if len(a.Sections) != 1 {
		t.Fatalf("%d sections, want the one of the slowest request", len(a.Sections))
	}
	var maxE2E float64 // ms
	for _, r := range a.Attr.Requests {
		maxE2E = max(maxE2E, r.E2E/1e6)
	}
	rep := a.Report(testVersion)
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Analyses map[string]struct {
			E2E float64 `json:"e2e_ms"`
		} `json:"analyses"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc.Analyses["slowest"].E2E != maxE2E {
		t.Errorf("JSON analyses %+v (%v), want slowest.e2e_ms %v", doc.Analyses, err, maxE2E)
	}
	line := fmt.Sprintf("%.1f ms end to end", maxE2E)
	text, md, html := renderAll(t, a)
	for name, out := range map[string]string{"text": text, "markdown": md, "html": html} {
		if !strings.Contains(strings.ToLower(out), "slowest request") || !strings.Contains(out, line) {
			t.Errorf("%s report lacks the slowest request's section (%q):\n%s", name, line, out)
		}
	}
	if i, j := strings.Index(text, "SLOWEST REQUEST"), strings.Index(text, "SOURCES"); i < 0 || j < i {
		t.Errorf("the section is not before SOURCES in the text report:\n%s", text)
	}

	opts.RequestsOnly = true
	if a := run(t, opts, filepath.Join(demoDir, "trace.otlp.jsonl.gz")); len(a.Sections) != 0 || a.Report(testVersion).Analyses != nil {
		t.Errorf("a skipped analysis left %d sections", len(a.Sections))
	}
}
