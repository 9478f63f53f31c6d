package stat

import (
	"cmp"
	"math"
	"slices"
)

// QValues returns Benjamini–Hochberg adjusted p-values (q-values) for ps
// (Benjamini & Hochberg 1995, JRSS-B 57:289): with p_(1) ≤ … ≤ p_(m),
//
//	q_(i) = min_{j ≥ i} min(1, m·p_(j)/j)
//
// and rejecting every q ≤ α controls the false discovery rate at α when the
// tests are independent or positively dependent (PRDS), which tenant pairs
// sharing load series plausibly are. With dependent = true it applies the
// Benjamini–Yekutieli (2001, Ann. Stat. 29:1165) factor Σ_{i=1}^m 1/i, valid
// under any dependence. NaN p-values (tests not run) stay NaN and do not
// count in m. This matches R's p.adjust(p, "BH") and p.adjust(p, "BY").
func QValues(ps []float64, dependent bool) []float64 {
	q := make([]float64, len(ps))
	idx := make([]int, 0, len(ps))
	for i, p := range ps {
		q[i] = math.NaN()
		if !math.IsNaN(p) {
			idx = append(idx, i)
		}
	}
	m := len(idx)
	if m == 0 {
		return q
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ps[a], ps[b]) })
	c := 1.0
	if dependent {
		c = 0
		for i := 1; i <= m; i++ {
			c += 1 / float64(i)
		}
	}
	run := math.Inf(1)
	for r := m; r >= 1; r-- {
		i := idx[r-1]
		run = math.Min(run, math.Min(1, c*float64(m)*ps[i]/float64(r)))
		q[i] = run
	}
	return q
}
