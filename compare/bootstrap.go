package compare

import (
	"math"
	"slices"
)

// ratioSeries is a per-unit numerator and denominator (a bucket's ms and the
// request's output tokens) whose ratio of sums is the statistic.
type ratioSeries struct {
	units    []int32 // units where both are known
	num, den []float64
}

func newRatioSeries(num, den []float64) ratioSeries {
	var r ratioSeries
	for i := range num {
		if math.IsNaN(num[i]) || math.IsNaN(den[i]) {
			continue
		}
		r.units = append(r.units, int32(i))
		r.num = append(r.num, num[i])
		r.den = append(r.den, den[i])
	}
	return r
}

// value is Σnum/Σden over the original sample.
func (r ratioSeries) value() float64 {
	var a, b float64
	for i := range r.units {
		a += r.num[i]
		b += r.den[i]
	}
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// resampled is Σc·num/Σc·den over the resample.
func (r ratioSeries) resampled(counts []int32) float64 {
	var a, b float64
	for i, u := range r.units {
		if c := counts[u]; c != 0 {
			a += float64(c) * r.num[i]
			b += float64(c) * r.den[i]
		}
	}
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// bootDiff summarizes the replicate differences of one statistic between
// the candidate and the baseline.
type bootDiff struct {
	abs   []float64 // c* − b*, sorted, NaN replicates dropped
	ratio []float64 // c*/b*, sorted; +Inf when b* = 0 < c*, 1 when both are 0
	logr  []float64 // log(c*/b*) over replicates where both are > 0
	reps  int       // replicates attempted
}

func newBootDiff(base, cand []float64) bootDiff {
	d := bootDiff{reps: len(base)}
	for i := range base {
		b, c := base[i], cand[i]
		if math.IsNaN(b) || math.IsNaN(c) {
			continue
		}
		d.abs = append(d.abs, c-b)
		switch {
		case b > 0 && c >= 0:
			d.ratio = append(d.ratio, c/b)
			if c > 0 {
				d.logr = append(d.logr, math.Log(c/b))
			}
		case b == 0 && c == 0:
			d.ratio = append(d.ratio, 1)
		case b == 0 && c > 0:
			d.ratio = append(d.ratio, math.Inf(1))
		}
	}
	slices.Sort(d.abs)
	slices.Sort(d.ratio)
	return d
}
