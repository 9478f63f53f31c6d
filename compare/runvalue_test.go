package compare_test

import (
	"math"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/compare/comparetest"
)

// TestRunValueIsDiffsPerRunValue: with several runs per side diff reports
// each metric's value as the geometric mean of the per-run values (the
// arithmetic mean where a value is ≤ 0: welchMetric); RunValue gives those
// per-run values, so their mean is what diff shows.
func TestRunValueIsDiffsPerRunValue(t *testing.T) {
	var base, cand []compare.Run
	for i := range 3 {
		base = append(base, comparetest.Workload{Requests: 200, Seed: uint64(10 + i)}.Run())
		cand = append(cand, comparetest.Workload{Requests: 200, Seed: uint64(20 + i), AttentionFactor: 1.3}.Run())
	}
	o := compare.DefaultOptions()
	o.Reps = 50
	res, err := compare.Compare(compare.Side{Runs: base}, compare.Side{Runs: cand}, o)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, m := range res.Metrics {
		var vb, vc []float64
		for i := range base {
			b, okb := compare.RunValue(&base[i], m.Name)
			c, okc := compare.RunValue(&cand[i], m.Name)
			if okb {
				vb = append(vb, b)
			}
			if okc {
				vc = append(vc, c)
			}
		}
		// A shift has no per-run value (RunValue says so below).
		if math.IsNaN(m.Baseline) || strings.HasSuffix(m.Name, ".shift") {
			continue
		}
		if len(vb) != 3 || len(vc) != 3 {
			t.Errorf("%s: RunValue has %d and %d runs, want 3", m.Name, len(vb), len(vc))
			continue
		}
		agg := geoMean
		for _, v := range append(append([]float64(nil), vb...), vc...) {
			if v <= 0 {
				agg = arithMean
			}
		}
		for _, pair := range [][2]float64{{agg(vb), m.Baseline}, {agg(vc), m.Candidate}} {
			if math.Abs(pair[0]-pair[1]) > 1e-9*math.Abs(pair[1]) {
				t.Errorf("%s: median of RunValue %v, diff shows %v", m.Name, pair[0], pair[1])
			}
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("only %d metrics checked", checked)
	}
	if v := compare.RequestValues(&base[0], "itl.p50"); len(v) != 200 {
		t.Errorf("itl.p50 request values: %d, want one per request (200)", len(v))
	}
	if _, ok := compare.RunValue(&base[0], "tpot.shift"); ok {
		t.Error("a shift has no per-run value")
	}
}

func arithMean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func geoMean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += math.Log(v)
	}
	return math.Exp(s / float64(len(x)))
}

// TestSameRunAsPrinted: two runs are the same when their JSON is, whatever
// the shortcut that tells most different runs apart: NaN and ±Inf all print
// as null, −0 prints as "-0", and the run ID does not count.
func TestSameRunAsPrinted(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name string
		a, b compare.Series
		same bool
	}{
		{"equal", compare.Series{1, 2.5}, compare.Series{1, 2.5}, true},
		{"one value", compare.Series{1, 2.5}, compare.Series{1, 2.50000001}, false},
		{"length", compare.Series{1, 2.5}, compare.Series{1, 2.5, 3}, false},
		{"NaN and +Inf print alike", compare.Series{nan, 1}, compare.Series{inf, 1}, true},
		{"-Inf and +Inf print alike", compare.Series{-inf}, compare.Series{inf}, true},
		{"-0 and 0 do not", compare.Series{math.Copysign(0, -1)}, compare.Series{0}, false},
		{"nil and empty are both left out", nil, compare.Series{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, field := range []func(*compare.Run) *compare.Series{
				func(r *compare.Run) *compare.Series { return &r.TTFT },
				func(r *compare.Run) *compare.Series { return &r.ITL },
				func(r *compare.Run) *compare.Series { return &r.Queue },
			} {
				x, y := compare.Run{RunID: "a", TPOT: compare.Series{3}}, compare.Run{RunID: "b", TPOT: compare.Series{3}}
				*field(&x), *field(&y) = c.a, c.b
				if got := compare.SameRun(x, y); got != c.same {
					t.Errorf("SameRun = %v, want %v", got, c.same)
				}
			}
		})
	}
}
