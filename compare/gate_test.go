package compare

import (
	"strings"
	"testing"
)

func TestParseGate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Gate
		str  string
	}{
		{"relative latency", "ttft.p99<+10%", Gate{"ttft.p99", Below, 10, true}, "ttft.p99 < +10%"},
		{"spaces", " tpot.p50 < +5 % ", Gate{"tpot.p50", Below, 5, true}, "tpot.p50 < +5%"},
		{"absolute ms", "tpot.p50<+2ms", Gate{"tpot.p50", Below, 2, false}, "tpot.p50 < +2ms"},
		{"absolute seconds", "e2e.p90<+0.5s", Gate{"e2e.p90", Below, 500, false}, "e2e.p90 < +500ms"},
		{"absolute us", "itl.p50<250us", Gate{"itl.p50", Below, 0.25, false}, "itl.p50 < +0.25ms"},
		{"throughput", "throughput>-5%", Gate{"throughput", Above, -5, true}, "throughput > -5%"},
		{"throughput absolute", "throughput>-3req/s", Gate{"throughput", Above, -3, false}, "throughput > -3req/s"},
		{"token throughput", "token_throughput>-100tok/s", Gate{"token_throughput", Above, -100, false}, "token_throughput > -100tok/s"},
		{"bucket", "token.gpu.attention<+10%", Gate{"token.gpu.attention", Below, 10, true}, "token.gpu.attention < +10%"},
		{"bucket absolute", "stage.prefill<+0.5ms", Gate{"stage.prefill", Below, 0.5, false}, "stage.prefill < +0.5ms"},
		{"tenant", "tenant.B<+1ms", Gate{"tenant.B", Below, 1, false}, "tenant.B < +1ms"},
		{"unsigned", "queue.mean<20%", Gate{"queue.mean", Below, 20, true}, "queue.mean < +20%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGate(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if g != tc.want {
				t.Errorf("got %+v, want %+v", g, tc.want)
			}
			if s := g.String(); s != tc.str {
				t.Errorf("String() = %q, want %q", s, tc.str)
			}
			// The canonical form parses back to the same rule.
			if g2, err := ParseGate(g.String()); err != nil || g2 != g {
				t.Errorf("round trip %q → %+v, %v", g.String(), g2, err)
			}
		})
	}
}

func TestParseGateErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no operator", "ttft.p99 10%", "want METRIC<THRESHOLD"},
		{"unknown metric", "ttfb.p99<+10%", "unknown metric"},
		{"unknown stat", "ttft.p95<+10%", "unknown statistic"},
		{"no unit", "ttft.p99<+10", "needs a unit"},
		{"wrong unit", "ttft.p99<+10req/s", "does not fit"},
		{"time unit on rate", "throughput>-5ms", "does not fit"},
		{"unknown bucket", "token.gpu.flash<+1%", "unknown token bucket"},
		{"unknown stage", "stage.sampling<+1%", "unknown stage"},
		{"empty tenant", "tenant.<+1%", "unknown metric"},
		{"garbage number", "ttft.p99<+1.2.3%", "want METRIC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseGate(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseGate(%q) error = %v, want it to mention %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestParsePolicyFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		gates   int
		failInc bool
		err     string
	}{
		{"full", "gates:\n  - ttft.p99 < +10%\n  - tpot.p50 < +2ms\n  - throughput > -5%\nfail_on_inconclusive: true\nalpha: 0.01\nblock: auto\n", 3, true, ""},
		{"gates only", "gates: ['ttft.p50<+5%']\n", 1, false, ""},
		{"empty", "", 0, false, "empty gate file"},
		{"no gates", "alpha: 0.05\n", 0, false, "no gates"},
		{"unknown key", "gates: ['ttft.p50<+5%']\nfail_on_inconclusve: true\n", 0, false, "not found"},
		{"bad gate", "gates: ['ttft.p50<+5']\n", 0, false, "needs a unit"},
		{"bad alpha", "gates: ['ttft.p50<+5%']\nalpha: 2\n", 0, false, "alpha"},
		{"bad block", "gates: ['ttft.p50<+5%']\nblock: big\n", 0, false, "block"},
		{"not yaml", "gates: [unclosed\n", 0, false, "gate.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pf, gates, err := ParsePolicyFile("gate.yaml", []byte(tc.yaml))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "gate.yaml") {
					t.Fatalf("error = %v, want it to name gate.yaml and mention %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(gates) != tc.gates {
				t.Errorf("%d gates, want %d", len(gates), tc.gates)
			}
			if got := pf.FailOnInconclusive != nil && *pf.FailOnInconclusive; got != tc.failInc {
				t.Errorf("fail_on_inconclusive = %v, want %v", got, tc.failInc)
			}
		})
	}
}

func TestParseBlock(t *testing.T) {
	for in, want := range map[string]int{"off": 0, "0": 0, "auto": BlockAuto, "AUTO": BlockAuto, "12": 12} {
		if got, err := ParseBlock(in); err != nil || got != want {
			t.Errorf("ParseBlock(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-3", "x", "1.5"} {
		if _, err := ParseBlock(in); err == nil {
			t.Errorf("ParseBlock(%q): want an error", in)
		}
	}
}
