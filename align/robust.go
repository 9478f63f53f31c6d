package align

import (
	"math"
	"math/rand/v2"
	"slices"
)

// median returns the median of xs (the mean of the two middle values for an
// even count), reordering xs. It is O(n) expected (quickselect).
func median(xs []float64) float64 {
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

// selectKth partially orders xs so that xs[k] is the k-th smallest, with
// smaller elements before it and larger after, and returns it (Hoare's
// selection with a median-of-three pivot).
func selectKth(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1
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

// quantile is the q-quantile of sorted xs, interpolating linearly between
// order statistics (numpy's default, DESIGN §7), so figures can be checked
// with one line of Python.
func quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	pos := q * float64(n-1)
	i := int(math.Floor(pos))
	if i >= n-1 {
		return sorted[n-1]
	}
	f := pos - float64(i)
	return sorted[i] + f*(sorted[i+1]-sorted[i])
}

// maxExactPairs bounds the pairs Theil–Sen examines exactly; beyond it a
// fixed-seed random sample of pairs is used (statistics.md A.4 step 2c), so
// the estimate stays O(n) in memory and reproducible.
const maxExactPairs = 1 << 20

// theilSen fits r = a + d·u by the Theil–Sen estimator: d is the median of
// the slopes of all pairs with distinct u, a the median of r − d·u (Sen,
// JASA 1968). It tolerates up to ~29% arbitrary outliers and assumes only that
// the errors are independent of u. ok is false when fewer than two distinct
// u exist.
func theilSen(u, r []float64) (a, d float64, ok bool) {
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
	d = median(slopes)
	a = medianOffset(u, r, d)
	return a, d, true
}

// medianOffset is the median of r − d·u.
func medianOffset(u, r []float64, d float64) float64 {
	res := make([]float64, len(u))
	for i := range u {
		res[i] = r[i] - d*u[i]
	}
	return median(res)
}

// weightedLine fits r = a + d·u by weighted least squares (weights w); with
// fixDrift it fits the weighted mean offset only. Used on bracket midpoints,
// weighted 1/width² (statistics.md A.4 step 2a).
func weightedLine(u, r, w []float64, fixDrift bool) (a, d float64) {
	var sw, su, sr float64
	for i := range u {
		sw += w[i]
		su += w[i] * u[i]
		sr += w[i] * r[i]
	}
	if sw == 0 {
		return 0, 0
	}
	mu, mr := su/sw, sr/sw
	if fixDrift {
		return mr, 0
	}
	var suu, sur float64
	for i := range u {
		du := u[i] - mu
		suu += w[i] * du * du
		sur += w[i] * du * (r[i] - mr)
	}
	if suu == 0 {
		return mr, 0
	}
	d = sur / suu
	return mr - d*mu, d
}

// absResidualQuantiles returns the p50 and p99 of |r − (a + d·u)|.
func absResidualQuantiles(u, r []float64, a, d float64) (p50, p99 float64) {
	res := make([]float64, len(u))
	for i := range u {
		res[i] = math.Abs(r[i] - a - d*u[i])
	}
	slices.Sort(res)
	return quantile(res, 0.5), quantile(res, 0.99)
}
