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

// resampledBatch is resampled for each of a batch's resamples, to the bit,
// when every known num and den is finite: a unit drawn 0 times then adds
// 0·num and 0·den, ±0, which leave a sum that starts at +0 as it was (as
// in planSeries.tokenSums), so the four replicates' sums run side by side
// without a branch on the counts.
func (r ratioSeries) resampledBatch(batch *[repBatch][]int32) [repBatch]float64 {
	c0, c1, c2, c3 := batch[0], batch[1], batch[2], batch[3]
	var a0, a1, a2, a3, b0, b1, b2, b3 float64
	num, den := r.num[:len(r.units)], r.den[:len(r.units)]
	for i, u := range r.units {
		n, d := num[i], den[i]
		f0, f1, f2, f3 := float64(c0[u]), float64(c1[u]), float64(c2[u]), float64(c3[u])
		a0 += f0 * n
		b0 += f0 * d
		a1 += f1 * n
		b1 += f1 * d
		a2 += f2 * n
		b2 += f2 * d
		a3 += f3 * n
		b3 += f3 * d
	}
	var out [repBatch]float64
	for k, ab := range [repBatch][2]float64{{a0, b0}, {a1, b1}, {a2, b2}, {a3, b3}} {
		out[k] = math.NaN()
		if ab[1] != 0 {
			out[k] = ab[0] / ab[1]
		}
	}
	return out
}

// finite reports whether every known num and den is finite
// (resampledBatch's premise).
func (r ratioSeries) finite() bool {
	return !slices.ContainsFunc(r.num, nonFinite) && !slices.ContainsFunc(r.den, nonFinite)
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
