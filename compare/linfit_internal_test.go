package compare

import (
	"github.com/llmprof/llmprof/internal/stat"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestFitLinearRecoversCoefficients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x [][]float64
	var y []float64
	for range 200 {
		a, b := rng.Float64()*1000, rng.Float64()
		x = append(x, []float64{1, a, b, a * b})
		y = append(y, 3-0.002*a+5*b+0.01*a*b)
	}
	f, err := fitLinear(x, y)
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []float64{3, -0.002, 5, 0.01} {
		if math.Abs(f.Beta[j]-want) > 1e-8*math.Max(1, math.Abs(want)) {
			t.Errorf("β%d = %g, want %g", j, f.Beta[j], want)
		}
		if got := f.Estimate(f.CoefWeights(j)); math.Abs(got-f.Beta[j]) > 1e-8*math.Max(1, math.Abs(want)) {
			t.Errorf("c'y for β%d = %g, want β = %g", j, got, f.Beta[j])
		}
	}
	if _, err := fitLinear([][]float64{{1, 2}, {1, 2}, {1, 2}}, []float64{1, 2, 3}); err == nil {
		t.Error("collinear columns: want an error")
	}
}

// TestClusteredVarianceCoverage checks the clustered variance of a side
// coefficient: on AR(1) errors (ρ = 0.8), blocks of consecutive
// observations keep the interval's coverage near 95%, where one
// observation per cluster (independent errors assumed) falls far short.
func TestClusteredVarianceCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const trials, n = 400, 400
	cover, coverIID := 0, 0
	for range trials {
		var x [][]float64
		var y []float64
		var tm []float64
		e := 0.0
		for i := range 2 * n {
			side := 0.0
			if i >= n {
				side = 1
			}
			if i == n {
				e = 0
			}
			e = 0.8*e + rng.NormFloat64()*0.6
			u := rng.Float64()
			x = append(x, []float64{1, side, u})
			y = append(y, 0.5*u+e)
			tm = append(tm, float64(i%n))
		}
		f, err := fitLinear(x, y)
		if err != nil {
			t.Fatal(err)
		}
		g := blocksFor(n)
		cl := append(timeBlocks(tm[:n], g, 0), timeBlocks(tm[n:], g, g)...)
		c := f.CoefWeights(1)
		se := math.Sqrt(f.ClusteredVar(c, cl, 2*g, stat.ClusterCount))
		if math.Abs(f.Beta[1]) < 2.02*se {
			cover++
		}
		iid := make([]int, 2*n)
		for i := range iid {
			iid[i] = i
		}
		if math.Abs(f.Beta[1]) < 1.96*math.Sqrt(f.ClusteredVar(c, iid, 2*n, stat.ClusterCount)) {
			coverIID++
		}
	}
	rate, rateIID := float64(cover)/trials, float64(coverIID)/trials
	t.Logf("coverage of the side coefficient: time blocks %.1f%%, independent %.1f%%", 100*rate, 100*rateIID)
	if rate < 0.90 {
		t.Errorf("time-block clustered interval covered %.1f%%, want ≥ 90%%", 100*rate)
	}
	if rateIID > 0.85 {
		t.Errorf("independent-error interval covered %.1f%%: the AR(1) case should defeat it", 100*rateIID)
	}
}

func TestConcurrencyAtArrival(t *testing.T) {
	// Arrivals at 0, 1, 2, 10 ms; the first lasts 5 ms, the second 0.5,
	// the third 20, the fourth 1.
	r := Run{Requests: 4, ArrivalMS: Series{0, 1, 2, 10}, E2E: Series{5, 0.5, 20, 1}}
	got := concurrencyAtArrival(&r)
	want := []float64{0, 1, 1, 1} // at 2 ms: #0 in flight, #1 done; at 10: #2
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: %v in flight, want %v", i, got[i], want[i])
		}
	}
	if concurrencyAtArrival(&Run{Requests: 2, E2E: Series{1, 1}}) != nil {
		t.Error("no arrival times: want nil")
	}
}

func TestStepAndAdjustedMetricNames(t *testing.T) {
	for _, ok := range []string{"step.cost", "step.cost.decode", "step.cost.prefill", "ttft.adj", "tpot.adj", "itl.adj", "e2e.adj", "ttft.p50", "stage.prefill"} {
		if err := ValidMetric(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"step.time", "step.", "queue.adj", "throughput.adj"} {
		err := ValidMetric(bad)
		if err == nil {
			t.Errorf("%s: accepted", bad)
			continue
		}
		if strings.HasPrefix(bad, "step.") && !strings.Contains(err.Error(), "step.cost") {
			t.Errorf("%s: error %q does not list the step metrics", bad, err)
		}
	}
	if _, err := ParseGate("step.cost<+2ms"); err == nil {
		t.Error("an absolute step.cost rule: accepted")
	}
}
