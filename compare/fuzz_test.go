package compare_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/llmprof/llmprof/compare"
)

// FuzzCompare feeds Compare runs built from arbitrary bytes — zeros,
// negatives, NaN, huge values, ties, tiny samples, unknown buckets — and
// requires an error or a result, never a panic, and never a pass for a rule
// whose metric had too few samples.
func FuzzCompare(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, uint8(3), false)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint8(1), true)
	f.Add([]byte("\x7f\xf8\x00\x00\x00\x00\x00\x01 some bytes that become floats"), uint8(5), false)
	f.Fuzz(func(t *testing.T, data []byte, split uint8, blocks bool) {
		vals := make([]float64, 0, len(data)/2)
		for i := 0; i+2 <= len(data); i += 2 {
			v := float64(int16(binary.LittleEndian.Uint16(data[i:])))
			if v == -32768 {
				v = math.NaN()
			}
			vals = append(vals, v)
		}
		if len(vals) < 2 {
			return
		}
		k := 1 + int(split)%(len(vals)-1)
		mk := func(v []float64) compare.Run {
			n := len(v)
			ones := make(compare.Series, n)
			for i := range ones {
				ones[i] = 1 + float64(i%3)
			}
			return compare.Run{
				Requests: n, Completed: n, DurationMS: 1000,
				TTFT: v, TPOT: v, E2E: v, Queue: v, ITL: v, OutputTokens: ones,
				Stages:  map[string]compare.Series{"prefill": v},
				Tenants: map[string]compare.Series{"x": v},
			}
		}
		o := compare.DefaultOptions()
		o.Reps = 20
		if blocks {
			o.Block = compare.BlockAuto
		}
		for _, r := range []string{"ttft.p99<+10%", "tpot.p50<+1ms", "itl.mean<+5%", "throughput>-5%", "stage.prefill<+10%", "tenant.x<+1ms"} {
			g, err := compare.ParseGate(r)
			if err != nil {
				t.Fatal(err)
			}
			o.Policy.Gates = append(o.Policy.Gates, g)
		}
		res, err := compare.Compare(compare.Side{Label: "b", Runs: []compare.Run{mk(vals[:k])}}, compare.Side{Label: "c", Runs: []compare.Run{mk(vals[k:])}}, o)
		if err != nil {
			return
		}
		for _, m := range res.Metrics {
			if m.Gate == nil || m.Gate.Verdict != compare.Pass {
				continue
			}
			// Hodges–Lehmann's floor depends on both sizes (1/C(n1+n2, n1) ≤ α/2);
			// the others need MinN per side.
			if m.Method != compare.MethodHodgesLehmann && (m.NBaseline < m.MinN || m.NCandidate < m.MinN) {
				t.Errorf("%s passed with %d and %d samples (needs %d)", m.Name, m.NBaseline, m.NCandidate, m.MinN)
			}
			if math.IsInf(m.CILow, 0) || math.IsInf(m.CIHigh, 0) || math.IsNaN(m.CILow) || math.IsNaN(m.CIHigh) {
				t.Errorf("%s passed without a finite interval [%v, %v]", m.Name, m.CILow, m.CIHigh)
			}
		}
	})
}
