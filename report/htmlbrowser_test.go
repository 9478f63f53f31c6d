package report

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/internal/browser"
)

// TestEffectMatrixLayoutInBrowser draws the tenant effect matrices of four
// tenants, one with a long shared name, and checks in headless Chromium that
// no two texts overlap: the column headers ("chatchat+search (shared)embed"
// before they were slanted) and the cells.
func TestEffectMatrixLayoutInBrowser(t *testing.T) {
	bin, err := browser.Find()
	if err != nil {
		t.Skip("browser test skipped: ", err)
	}
	names := []string{"batch-eval", "chat", "chat+search (shared)", "embed", "search"}
	res := &causal.Result{Metrics: []causal.Metric{causal.MetricTTFT, causal.MetricTPOT}, Alpha: 0.05, Step: 0.1, LoadUnit: "fraction"}
	for _, n := range names {
		res.Tenants = append(res.Tenants, causal.TenantSummary{Name: n})
	}
	for _, m := range res.Metrics {
		for i, s := range names {
			for j, d := range names {
				if i == j {
					continue
				}
				v := causal.VerdictNoEvidence
				if s == "embed" && d == "chat+search (shared)" {
					v = causal.VerdictInterference
				}
				res.Pairs = append(res.Pairs, causal.Pair{Source: s, Target: d, Metric: m, Estimable: true, Verdict: v,
					EffectPct: causal.Float(float64(i-j) * 3.3), CILowPct: -1, CIHighPct: 1, Q: 0.5})
			}
		}
	}
	r := &Report{Requests: &Requests{}, Tenants: res}
	r.Requests.Requests = 10
	var b bytes.Buffer
	if err := r.WriteHTML(&b, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte(`aria-label="TTFT effect, source ↓ target →"`)) {
		t.Fatalf("no TTFT effect matrix in the page")
	}
	if d := os.Getenv("LLMPROF_SCREENSHOT_DIR"); d != "" {
		_ = os.WriteFile(d+"/effect.html", b.Bytes(), 0o644)
	}
	lay, err := browser.CheckLayout(context.Background(), bin, b.Bytes(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range lay.Overlaps {
		t.Errorf("overlapping text: %s", o)
	}
	for _, c := range lay.SameColours {
		t.Errorf("two legend entries drawn alike: %s", c)
	}
}

// TestLayoutCheckCatchesRepeatedColours: the browser check itself finds a
// legend with two entries of one colour (the per-token chart's queue and
// memcpy were both #0072B2 before areaPalette).
func TestLayoutCheckCatchesRepeatedColours(t *testing.T) {
	bin, err := browser.Find()
	if err != nil {
		t.Skip("browser test skipped: ", err)
	}
	svg := stackedBars("repeated", []string{"queue", "gpu.memcpy"}, []string{palette[0], palette[0]}, []stackRow{{Label: "a", Shares: []float64{0.5, 0.5}}})
	page := []byte(`<!DOCTYPE html><html><body>` + svg + `</body></html>`)
	lay, err := browser.CheckLayout(context.Background(), bin, page, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(lay.SameColours) != 1 {
		t.Errorf("same colours found: %q, want the one pair", lay.SameColours)
	}
}
