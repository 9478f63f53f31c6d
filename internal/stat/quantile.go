package stat

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
)

// Quantile returns the q-quantile of a sorted sample by linear interpolation
// between order statistics: h = (n−1)·q, x_⌊h⌋ + (h−⌊h⌋)(x_⌊h⌋+1 − x_⌊h⌋).
// It is numpy's default (method "linear", Hyndman & Fan 1996 type 7), so
// every figure can be checked with one line of Python; gonum's
// stat.LinInterp is another rule (type 4: 1.2 where this gives 1.4 for the
// 0.1-quantile of 1, 2, 4, 8, 16). NaN for an empty sample.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * q
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	return Interpolate(sorted[lo], sorted[lo+1], h-float64(lo))
}

// Quantiles returns Quantile(sorted xs, q) for each q of qs, exactly (the
// same order statistics, interpolated the same way), without sorting xs:
// it reorders xs by selection (selectKth), each needed order statistic
// found among the elements above the previous one, so a few quantiles of n
// values cost O(n) expected instead of a sort's O(n log n). xs must not
// hold NaN (which a sort would order first). NaN for an empty sample.
func Quantiles(xs []float64, qs ...float64) []float64 {
	out := make([]float64, len(qs))
	n := len(xs)
	if n == 0 {
		for i := range out {
			out[i] = math.NaN()
		}
		return out
	}
	// The order statistics each q interpolates between, as Quantile picks
	// them; hi == lo where Quantile takes one value.
	type need struct{ lo, hi int }
	needs := make([]need, len(qs))
	var ks []int
	for i, q := range qs {
		h := float64(n-1) * q
		lo := int(math.Floor(h))
		switch {
		case lo >= n-1:
			needs[i] = need{n - 1, n - 1}
		case lo < 0:
			needs[i] = need{0, 0}
		default:
			needs[i] = need{lo, lo + 1}
		}
		ks = append(ks, needs[i].lo, needs[i].hi)
	}
	slices.Sort(ks)
	ks = slices.Compact(ks)
	start := 0
	for _, k := range ks {
		switch rest := xs[start:]; k - start {
		case 0:
			// The next one up from the previous order statistic (most qs
			// interpolate between two neighbours), or the smallest: the
			// minimum of what is left, found without partitioning.
			minFirst(rest)
		case len(rest) - 1:
			maxLast(rest) // the maximum (q = 1)
		default:
			selectKth(rest, k-start)
		}
		start = k + 1
	}
	for i, q := range qs {
		lo := needs[i].lo
		if needs[i].hi == lo {
			out[i] = xs[lo]
			continue
		}
		out[i] = Interpolate(xs[lo], xs[lo+1], float64(n-1)*q-float64(lo))
	}
	return out
}

// QuantileUnsorted is Quantile of xs once sorted, computed by selection
// (Quantiles): the same order statistics, so the same value. It reorders xs.
// A sample with NaN (which slices.Sort puts first) or with a negative zero
// (which a sort and a selection may leave on either side of a +0, and which
// prints as -0) is sorted, so that it too gives what Quantile of the sorted
// sample gives.
func QuantileUnsorted(xs []float64, q float64) float64 {
	if SortDecides(xs) {
		slices.Sort(xs)
		return Quantile(xs, q)
	}
	return Quantiles(xs, q)[0]
}

// SortDecides reports whether xs holds a NaN or a negative zero: values
// whose place only a sort decides (slices.Sort puts NaN first, and a
// selection may leave −0 on either side of a +0), so that an order
// statistic found by selection may differ from the sorted sample's. Callers
// that must give what the sort gives sort such a sample instead.
func SortDecides(xs []float64) bool {
	return slices.ContainsFunc(xs, func(x float64) bool { return x != x || x == 0 && math.Signbit(x) })
}

// MinSamplesForQuantile is the smallest sample size for which a
// distribution-free, equal-tailed 1−α confidence interval of the q-quantile
// has finite bounds: the interval [x_(1), x_(n)] must leave at most α/2
// outside on each side, so max(q, 1−q)^n ≤ α/2 (binomial order statistics,
// as benchstat's QuantileCI; docs/diff.md). At α = 0.05 that is 6 for
// the median, 36 for p90, 72 for p95 and 368 for p99. Below it a quantile
// comparison can never be confident, so the gate says inconclusive.
func MinSamplesForQuantile(q, alpha float64) int {
	p := max(q, 1-q)
	if p >= 1 {
		return math.MaxInt32
	}
	n := math.Log(alpha/2) / math.Log(p)
	// Guard against n landing a hair above an integer by rounding error.
	return int(math.Ceil(n - 1e-9))
}

// Interpolate is a + f(b − a), exact when a == b (including infinities).
func Interpolate(a, b, f float64) float64 {
	if a == b || f == 0 {
		return a
	}
	return a + f*(b-a)
}

// Median returns the median of xs (the mean of the two middle values for an
// even count), reordering xs. It is O(n) expected (quickselect).
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	hi := selectKth(xs, n/2)
	if n%2 == 1 {
		return hi
	}
	// After selection every element below n/2 is ≤ hi; the lower middle is
	// their maximum.
	lo := xs[0]
	for _, x := range xs[1 : n/2] {
		lo = math.Max(lo, x)
	}
	return (lo + hi) / 2
}

// Select returns the k-th smallest of xs (0-based: k = 0 is the minimum),
// what xs[k] would be after a sort, reordering xs by selection in O(n)
// expected: every element before k is then ≤ it and every one after ≥ it.
// xs must not hold NaN.
func Select[T cmp.Ordered](xs []T, k int) T { return selectKth(xs, k) }

// minFirst swaps the first smallest element of xs to xs[0]: selectKth(xs, 0)
// in one pass without partitioning. xs is not empty.
func minFirst[T cmp.Ordered](xs []T) {
	m := 0
	for i := 1; i < len(xs); i++ {
		if xs[i] < xs[m] {
			m = i
		}
	}
	xs[0], xs[m] = xs[m], xs[0]
}

// maxLast swaps the first largest element of xs to its end:
// selectKth(xs, len(xs)-1) in one pass. xs is not empty.
func maxLast[T cmp.Ordered](xs []T) {
	m, last := 0, len(xs)-1
	for i := 1; i < len(xs); i++ {
		if xs[i] > xs[m] {
			m = i
		}
	}
	xs[last], xs[m] = xs[m], xs[last]
}

// selectKth partially orders xs so that xs[k] is the k-th smallest, with
// smaller elements before it and larger after, and returns it (Hoare's
// selection with a median-of-three pivot). Ranges of lomutoMin elements or
// more are partitioned without a branch on the comparison (splitBelow):
// on a sample in random order Hoare's scans mispredict about every other
// comparison, which cost more than the partition's moves.
func selectKth[T cmp.Ordered](xs []T, k int) T {
	lo, hi := 0, len(xs)-1
	for hi-lo >= lomutoMin {
		pivot := pivotNear(xs, lo, hi, k)
		s := splitBelow(xs[lo:hi+1], pivot) + lo
		switch {
		case k < s:
			hi = s - 1
			continue
		case s > lo:
			lo = s
			continue
		}
		// Nothing below the pivot, the range's least value: move its
		// copies first, which leaves a smaller range or the answer.
		e := splitAtMost(xs[lo:hi+1], pivot) + lo
		if k < e {
			return xs[k]
		}
		lo = e
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if xs[mid] < xs[lo] {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if xs[hi] < xs[lo] {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if xs[hi] < xs[mid] {
			xs[hi], xs[mid] = xs[mid], xs[hi]
		}
		pivot := xs[mid]
		i, j := lo, hi
		for i <= j {
			for xs[i] < pivot {
				i++
			}
			for xs[j] > pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}

// lomutoMin is the least range selectKth partitions with splitBelow.
const lomutoMin = 64

// pivotNear picks selectKth's pivot for the range [lo, hi]: in a large
// range, of nine elements spread over it, the one whose rank among them is
// k's within the range, so that the partition falls near k (p90 and p99
// then take one pass over the whole range, not a median's and then the
// upper half's); the median of three elsewhere.
func pivotNear[T cmp.Ordered](xs []T, lo, hi, k int) T {
	if hi-lo < 1024 {
		return medianOfThree(xs, lo, hi)
	}
	var sample [9]T
	step := (hi - lo) / 8
	for i := range sample {
		sample[i] = xs[lo+i*step]
		for j := i; j > 0 && sample[j] < sample[j-1]; j-- {
			sample[j], sample[j-1] = sample[j-1], sample[j]
		}
	}
	return sample[(8*(k-lo)+(hi-lo)/2)/(hi-lo)]
}

// medianOfThree returns the median of xs[lo], xs[mid] and xs[hi].
func medianOfThree[T cmp.Ordered](xs []T, lo, hi int) T {
	a, b, c := xs[lo], xs[lo+(hi-lo)/2], xs[hi]
	if b < a {
		a, b = b, a
	}
	if c < b {
		b = c
		if b < a {
			b = a
		}
	}
	return b
}

// splitBelow moves the elements of xs below pivot before the others and
// returns how many there are (Lomuto's partition). Each element is swapped
// whatever the comparison says and the count grows by its result, so the
// loop has no branch to mispredict.
func splitBelow[T cmp.Ordered](xs []T, pivot T) int {
	s := 0
	for i, x := range xs {
		xs[i] = xs[s]
		xs[s] = x
		d := 0
		if x < pivot {
			d = 1
		}
		s += d
	}
	return s
}

// splitAtMost is splitBelow for the elements not above pivot.
func splitAtMost[T cmp.Ordered](xs []T, pivot T) int {
	s := 0
	for i, x := range xs {
		xs[i] = xs[s]
		xs[s] = x
		d := 1
		if pivot < x {
			d = 0
		}
		s += d
	}
	return s
}

// maxExactPairs bounds the pairs Theil–Sen examines exactly; beyond it a
// fixed-seed random sample of pairs is used (docs/statistics.md A.4 step 2c), so
// the estimate stays O(n) in memory and reproducible.
const maxExactPairs = 1 << 20

// TheilSen fits r = a + d·u by the Theil–Sen estimator: d is the median of
// the slopes of all pairs with distinct u, a the median of r − d·u (Sen,
// JASA 1968). It tolerates up to ~29% arbitrary outliers and assumes only that
// the errors are independent of u. ok is false when fewer than two distinct
// u exist.
func TheilSen(u, r []float64) (a, d float64, ok bool) {
	n := len(u)
	if n < 2 {
		return 0, 0, false
	}
	var slopes []float64
	if pairs := n * (n - 1) / 2; pairs <= maxExactPairs {
		slopes = make([]float64, 0, pairs)
		for i := range n {
			for j := i + 1; j < n; j++ {
				if du := u[j] - u[i]; du != 0 {
					slopes = append(slopes, (r[j]-r[i])/du)
				}
			}
		}
	} else {
		rng := rand.New(rand.NewPCG(0x6c6c6d70, 0x726f66))
		slopes = make([]float64, 0, maxExactPairs)
		for range maxExactPairs {
			i, j := rng.IntN(n), rng.IntN(n)
			if du := u[j] - u[i]; du != 0 {
				slopes = append(slopes, (r[j]-r[i])/du)
			}
		}
	}
	if len(slopes) == 0 {
		return 0, 0, false
	}
	d = Median(slopes)
	a = medianOffset(u, r, d)
	return a, d, true
}

// medianOffset is the median of r − d·u.
func medianOffset(u, r []float64, d float64) float64 {
	res := make([]float64, len(u))
	for i := range u {
		res[i] = r[i] - d*u[i]
	}
	return Median(res)
}
