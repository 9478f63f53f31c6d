package compare

import (
	"math"
	"slices"

	"github.com/llmprof/llmprof/internal/stat"
)

// mean returns the arithmetic mean, NaN for an empty sample.
func mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// stddev returns the sample standard deviation (n−1 denominator).
func stddev(x []float64) float64 {
	if len(x) < 2 {
		return math.NaN()
	}
	m := mean(x)
	var s float64
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(x)-1))
}

// sortedCopy returns x sorted ascending, leaving x alone: what
// slices.Sort leaves, by a radix sort when x is long (stat.SortFloats).
func sortedCopy(x []float64) []float64 {
	s := slices.Clone(x)
	stat.SortFloats(s)
	return s
}

// quantileOf is the q-quantile of x (stat.Quantile of x sorted), by
// selection on a copy: x keeps its order.
func quantileOf(x []float64, q float64) float64 {
	return stat.QuantileUnsorted(slices.Clone(x), q)
}

// allPositive reports whether every value is > 0, so logs exist.
func allPositive(xs ...[]float64) bool {
	for _, x := range xs {
		for _, v := range x {
			if !(v > 0) {
				return false
			}
		}
	}
	return true
}

// logs returns the natural logs of x.
func logs(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Log(v)
	}
	return out
}
