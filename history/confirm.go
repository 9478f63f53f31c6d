package history

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// runTTest is Otava's significance test (otava/analysis.py
// TTestSignificanceTester: two-sided Student's t-test with pooled variance,
// scipy's ttest_ind_from_stats) on the runs' values of two segments, with
// sample variances (n − 1; Otava passes numpy's default n, which understates
// the spread of a few runs). Its variance comes from the runs, so
// run-to-run variance is in its null. With fewer than three runs there is no
// degree of freedom: ok is false.
func runTTest(x, y []float64) (p float64, ok bool) {
	n1, n2 := float64(len(x)), float64(len(y))
	df := n1 + n2 - 2
	if len(x) == 0 || len(y) == 0 || df < 1 {
		return 1, false
	}
	m1, v1 := meanVar(x)
	m2, v2 := meanVar(y)
	pooled := ((n1-1)*v1 + (n2-1)*v2) / df
	se := math.Sqrt(pooled * (1/n1 + 1/n2))
	d := math.Abs(m1 - m2)
	switch {
	case d == 0:
		return 1, true
	case se == 0:
		return 0, true
	}
	return math.Min(1, 2*distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(d/se)), true
}

func meanVar(x []float64) (m, v float64) {
	for _, a := range x {
		m += a
	}
	m /= float64(len(x))
	if len(x) < 2 {
		return m, 0
	}
	for _, a := range x {
		v += (a - m) * (a - m)
	}
	return m, v / float64(len(x)-1)
}

// confirmByRuns keeps the change points found on requests whose segments'
// run values also differ by Otava's t-test at alpha: the request-level
// permutation test is exact only when a segment's runs differ by their
// requests' noise alone, and runs also differ from each other (the
// replicated vllm-bench runs by 0.4–3.5% in p50 and p90); the t-test
// compares that difference with the spread between the runs themselves.
// Like Otava's merge step it drops the weakest change first and tests its
// neighbours again: the largest p above alpha; a change whose neighbours
// leave no degree of freedom (one run on each side) cannot be tested yet
// and goes only when every testable one is confirmed — the one with the
// smallest Q̂ first — so that a change next to a spurious one is tested
// again once the spurious one is gone. cps index runVals (one value per run, NaN-free); the
// kept change points carry the t-test's p in RunP.
func confirmByRuns(cps []ChangePoint, runVals []float64, alpha float64) []ChangePoint {
	cps = slices.Clone(cps)
	p := make([]float64, len(cps))
	testable := make([]bool, len(cps))
	test := func(i int) {
		lo, hi := 0, len(runVals)
		if i > 0 {
			lo = cps[i-1].Index
		}
		if i+1 < len(cps) {
			hi = cps[i+1].Index
		}
		p[i], testable[i] = runTTest(runVals[lo:cps[i].Index], runVals[cps[i].Index:hi])
	}
	for i := range cps {
		test(i)
	}
	for len(cps) > 0 {
		weakest := -1
		for i := range p {
			if testable[i] && p[i] > alpha && (weakest < 0 || p[i] > p[weakest]) {
				weakest = i
			}
		}
		if weakest < 0 {
			for i := range p {
				if !testable[i] && (weakest < 0 || cps[i].Q < cps[weakest].Q) {
					weakest = i
				}
			}
		}
		if weakest < 0 {
			break
		}
		cps = slices.Delete(cps, weakest, weakest+1)
		p = slices.Delete(p, weakest, weakest+1)
		testable = slices.Delete(testable, weakest, weakest+1)
		if weakest > 0 {
			test(weakest - 1)
		}
		if weakest < len(cps) {
			test(weakest)
		}
	}
	for i := range cps {
		cps[i].RunP = p[i]
	}
	return cps
}
