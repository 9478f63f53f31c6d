package report

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/internal/browser"
)

// effectMatrixPage is a report holding the tenant effect matrices of four
// tenants, one with a long shared name.
func effectMatrixPage(t *testing.T) []byte {
	t.Helper()
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
	return b.Bytes()
}

// repeatedLabel is the chart whose legend draws two entries alike: the
// per-token chart's queue and memcpy were both #0072B2 before areaPalette.
const repeatedLabel = "repeated"

type layoutFindings struct {
	// matrix: the effect matrices' findings; repeated: the repeated-colour
	// chart's.
	matrix, repeated browser.Layout
}

var (
	layoutOnce sync.Once
	layoutRes  layoutFindings
	layoutErr  error
)

// checkedLayout is the layout check of the effect matrices' page with the
// repeated-colour chart added at its end, found once for both tests below:
// one start of Chromium, not two (each costs 2.6–3 s of CPU on a guest where
// process starts are dear). It splits the findings into the repeated
// chart's and the others'.
func checkedLayout(t *testing.T, bin string) layoutFindings {
	t.Helper()
	layoutOnce.Do(func() {
		svg := stackedBars(repeatedLabel, []string{"queue", "gpu.memcpy"}, []string{palette[0], palette[0]}, []stackRow{{Label: "a", Shares: []float64{0.5, 0.5}}})
		page := bytes.Replace(effectMatrixPage(t), []byte("</body>"), []byte(svg+"</body>"), 1)
		if d := os.Getenv("LLMPROF_SCREENSHOT_DIR"); d != "" {
			_ = os.WriteFile(d+"/effect.html", page, 0o644)
		}
		dir, err := os.MkdirTemp("", "llmprof-layout-")
		if err != nil {
			layoutErr = err
			return
		}
		defer os.RemoveAll(dir)
		lay, err := browser.CheckLayout(context.Background(), bin, page, dir)
		if err != nil {
			layoutErr = err
			return
		}
		for _, f := range lay.Overlaps {
			l := &layoutRes.matrix
			if strings.HasPrefix(f, repeatedLabel+": ") {
				l = &layoutRes.repeated
			}
			l.Overlaps = append(l.Overlaps, f)
		}
		for _, f := range lay.SameColours {
			l := &layoutRes.matrix
			if strings.HasPrefix(f, repeatedLabel+": ") {
				l = &layoutRes.repeated
			}
			l.SameColours = append(l.SameColours, f)
		}
	})
	if layoutErr != nil {
		t.Fatal(layoutErr)
	}
	return layoutRes
}

// TestEffectMatrixLayoutInBrowser draws the tenant effect matrices of four
// tenants, one with a long shared name, and checks in headless Chromium that
// no two texts overlap: the column headers ("chatchat+search (shared)embed"
// before they were slanted) and the cells.
func TestEffectMatrixLayoutInBrowser(t *testing.T) {
	bin, err := browser.Find()
	if err != nil {
		t.Skip("browser test skipped: ", err)
	}
	lay := checkedLayout(t, bin).matrix
	for _, o := range lay.Overlaps {
		t.Errorf("overlapping text: %s", o)
	}
	for _, c := range lay.SameColours {
		t.Errorf("two legend entries drawn alike: %s", c)
	}
}

// TestLayoutCheckCatchesRepeatedColours: the browser check itself finds a
// legend with two entries of one colour (the per-token chart's queue and
// memcpy were both #0072B2 before areaPalette), on the page of the test
// above.
func TestLayoutCheckCatchesRepeatedColours(t *testing.T) {
	bin, err := browser.Find()
	if err != nil {
		t.Skip("browser test skipped: ", err)
	}
	lay := checkedLayout(t, bin).repeated
	if len(lay.SameColours) != 1 || len(lay.Overlaps) != 0 {
		t.Errorf("same colours found: %q, overlaps %q; want the one pair", lay.SameColours, lay.Overlaps)
	}
}
