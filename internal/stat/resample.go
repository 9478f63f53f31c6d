package stat

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/llmprof/llmprof/internal/radix"
)

// The bootstrap here is the percentile bootstrap (Efron & Tibshirani 1993,
// An Introduction to the Bootstrap, ch. 13) applied to each side
// independently: every replicate resamples the baseline's units and the
// candidate's units with replacement, computes the statistic on each, and
// the spread of the replicate differences gives the interval. With a block
// length ℓ > 1 it is Künsch's moving-block bootstrap (Ann. Statist.
// 17:1217, 1989): ⌈n/ℓ⌉ blocks of ℓ consecutive units, uniformly placed,
// truncated to n, which keeps short-range autocorrelation inside a block.
//
// A resample is held as multiplicities (how many times each unit was drawn),
// never as a copied array, so a replicate costs O(n) and no sorting: order
// statistics are found by walking the sample's sorted order and summing
// multiplicities, from whichever end is nearer.

// Resampler draws bootstrap multiplicities over n units in time order.
type Resampler struct {
	rng    *rand.Rand
	n      int
	block  int
	counts []int32
	diff   []int32
	// spans are the drawn blocks [start, end) of the last block resample,
	// so sums over it cost O(blocks) with prefix sums.
	spans [][2]int32
}

// NewResampler draws resamples of n units in blocks of block consecutive
// units (1: the ordinary bootstrap), from a stream fixed by seed and the
// stream's name, so each statistic's replicates are reproducible.
func NewResampler(n, block int, seed uint64, stream string) *Resampler {
	h := fnv.New64a()
	h.Write([]byte(stream))
	return &Resampler{
		rng:    rand.New(rand.NewPCG(seed, h.Sum64())),
		n:      n,
		block:  max(1, min(block, n)),
		counts: make([]int32, n),
		diff:   make([]int32, n+1),
	}
}

// Next returns the multiplicities of a fresh resample; they sum to n. The
// slice is reused by the following call.
func (r *Resampler) Next() []int32 {
	n, l := r.n, r.block
	if l <= 1 {
		clear(r.counts)
		for range n {
			r.counts[r.rng.IntN(n)]++
		}
		return r.counts
	}
	clear(r.diff)
	r.spans = r.spans[:0]
	blocks := (n + l - 1) / l
	for b := range blocks {
		length := l
		if b == blocks-1 {
			length = n - (blocks-1)*l
		}
		s := r.rng.IntN(n - l + 1)
		r.diff[s]++
		r.diff[s+length]--
		r.spans = append(r.spans, [2]int32{int32(s), int32(s + length)})
	}
	var acc int32
	for i := range n {
		acc += r.diff[i]
		r.counts[i] = acc
	}
	return r.counts
}

// Block is the block length drawn, block clamped to [1, n].
func (r *Resampler) Block() int { return r.block }

// Spans are the blocks [start, end) of the last resample Next drew, for
// BlockMean; nil with a block length of 1.
func (r *Resampler) Spans() [][2]int32 { return r.spans }

// SortedView is one series prepared for resampled order statistics: the
// indexes (into the units) of its known values in ascending value order.
type SortedView struct {
	order []int32   // unit index of the i-th smallest value
	vals  []float64 // the i-th smallest value
}

// NewSortedView orders values' known (non-NaN) entries: by value, equal
// values (−0 and +0 among them) by index. Series of 512 to 1 Mi known values
// are sorted as (key, index) pairs whose integer key orders as the value
// does (orderKey), by a stable radix sort: about 5× faster than comparing
// the values through their indexes, which shorter series (where the radix
// passes cost more than they save) and longer ones (whose pairs would take
// 32 bytes a value, not 4) still do.
func NewSortedView(values []float64) SortedView {
	n := 0
	for _, v := range values {
		if !math.IsNaN(v) {
			n++
		}
	}
	if n < 512 || n > 1<<20 {
		return indexSortedView(values, n)
	}
	keys := make([]radix.Keyed, 0, n)
	for i, v := range values {
		if !math.IsNaN(v) {
			keys = append(keys, radix.Keyed{Key: orderKey(v), Idx: int32(i)})
		}
	}
	radix.Sort(keys)
	order := make([]int32, n)
	vals := make([]float64, n)
	for i, k := range keys {
		order[i], vals[i] = k.Idx, values[k.Idx]
	}
	return SortedView{order: order, vals: vals}
}

// indexSortedView is NewSortedView by sorting the n known values' indexes,
// compared through the values.
func indexSortedView(values []float64, n int) SortedView {
	order := make([]int32, 0, n)
	for i, v := range values {
		if !math.IsNaN(v) {
			order = append(order, int32(i))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		va, vb := values[a], values[b]
		switch {
		case va < vb:
			return -1
		case va > vb:
			return 1
		}
		return int(a - b)
	})
	vals := make([]float64, len(order))
	for i, u := range order {
		vals[i] = values[u]
	}
	return SortedView{order: order, vals: vals}
}

// orderKey maps a non-NaN float64 to a uint64 that orders as the value does,
// equal for −0 and +0: the bits with the sign flipped for positives, all
// bits flipped for negatives.
func orderKey(v float64) uint64 {
	if v == 0 {
		v = 0 // −0 as +0
	}
	b := math.Float64bits(v)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

// orderValue is the value whose orderKey is k, for any value but −0 (which
// orderKey maps to +0's key).
func orderValue(k uint64) float64 {
	if k>>63 == 1 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// ByUnit returns the view of a series whose i-th value belongs to unit[i]
// (the tokens of requests): read with the units' multiplicities, its
// order statistics are those of the series with each value drawn as often
// as its unit, without expanding the counts to one per value.
func (s SortedView) ByUnit(unit []int32) SortedView {
	order := make([]int32, len(s.order))
	for i, j := range s.order {
		order[i] = unit[j]
	}
	return SortedView{order: order, vals: s.vals}
}

// Total is the resample's size restricted to this series' known units.
// values is the series the view was built from; walking it in unit order
// keeps the memory access sequential.
func (s SortedView) Total(values []float64, counts []int32) int {
	if len(s.order) == len(values) {
		return len(values) // no unknowns: multiplicities sum to n
	}
	t := 0
	for i, v := range values {
		if !math.IsNaN(v) {
			t += int(counts[i])
		}
	}
	return t
}

// Quantile returns the q-quantile (linear interpolation, as Quantile) of the
// resample described by counts, whose size on this series is total.
func (s SortedView) Quantile(counts []int32, total int, q float64) float64 {
	if total == 0 {
		return math.NaN()
	}
	h := float64(total-1) * q
	lo := int(math.Floor(h))
	hiPos := min(lo+1, total-1)
	a, b := s.orderPair(counts, total, lo, hiPos)
	return Interpolate(a, b, h-float64(lo))
}

// QuantileBatch is Quantile for four resamples of the series at once,
// out[r] = Quantile(counts[r], totals[r], q), bit for bit. It walks from
// the end nearer to the first resample's position for the four together
// (one read of the order for four resamples' counts, four sums side by
// side) until one of them nears its position, and each finishes alone
// from there.
//
// sized says each total is its resample's size on the view, the sum of its
// counts over the view's order (Total's, or for a view by unit the sum
// over its values of their units' counts). A position's order statistic is
// then the value at the first index whose running sum from the bottom
// exceeds it, which is the last whose running sum from the top exceeds
// total−1 minus it: either end finds the same index, so a resample whose
// nearer end is the other one (its size of another parity, at the median)
// gets the same value. Without sized, four resamples whose nearer ends
// differ are read one at a time.
func (s SortedView) QuantileBatch(counts *[4][]int32, totals *[4]int, q float64, sized bool) [4]float64 {
	var out [4]float64
	var p, p2 [4]int
	var frac [4]float64
	for r, total := range totals {
		if total == 0 {
			for r := range out {
				out[r] = s.Quantile(counts[r], totals[r], q)
			}
			return out
		}
		h := float64(total-1) * q
		p[r] = int(math.Floor(h))
		p2[r] = min(p[r]+1, total-1)
		frac[r] = h - float64(p[r])
	}
	var i int
	var cum [4]int
	fromTop := p[0] >= totals[0]/2
	for r := range p {
		if !sized && (p[r] >= totals[r]/2) != fromTop {
			for r := range out {
				out[r] = s.Quantile(counts[r], totals[r], q)
			}
			return out
		}
	}
	if fromTop {
		var tp2 [4]int
		for r := range tp2 {
			tp2[r] = totals[r] - 1 - p2[r]
		}
		i, cum = cumPastDownBatch(s.order, counts, &tp2)
	} else {
		i, cum = cumPastBatch(s.order, counts, &p)
	}
	for r := range out {
		a, b := s.orderPairFrom(counts[r], totals[r], p[r], p2[r], i, cum[r], fromTop)
		out[r] = Interpolate(a, b, frac[r])
	}
	return out
}

// orderPair returns the resample's order statistics at 0-based positions p
// ≤ p2, walking from the nearer end of the sorted sample.
func (s SortedView) orderPair(counts []int32, total, p, p2 int) (float64, float64) {
	if p < total/2 {
		return s.orderPairFrom(counts, total, p, p2, 0, 0, false)
	}
	return s.orderPairFrom(counts, total, p, p2, len(s.order)-1, 0, true)
}

// orderPairFrom is orderPair walking from the bottom, or from the top, with
// the walk already at index i with the sum cum of the counts it passed
// (those before i from the bottom, those after i from the top), at most
// the position it walks to.
func (s SortedView) orderPairFrom(counts []int32, total, p, p2, i, cum int, fromTop bool) (float64, float64) {
	if !fromTop {
		i, cum := cumPastFrom(s.order, counts, p, i, cum)
		if i == len(s.order) {
			return 0, s.vals[len(s.vals)-1]
		}
		a := s.vals[i]
		for cum <= p2 {
			if i++; i == len(s.order) {
				return a, s.vals[len(s.vals)-1]
			}
			cum += int(counts[s.order[i]])
		}
		return a, s.vals[i]
	}
	// From the top: position p counts total−1−p from the largest.
	tp, tp2 := total-1-p, total-1-p2 // tp2 ≤ tp
	i, cum = cumPastDownFrom(s.order, counts, tp2, i, cum)
	if i < 0 {
		return s.vals[0], 0
	}
	b := s.vals[i]
	for cum <= tp {
		if i--; i < 0 {
			return s.vals[0], b
		}
		cum += int(counts[s.order[i]])
	}
	return s.vals[i], b
}

// cumPastFrom walks order from index i, summing counts onto cum (the sum
// of the counts before i), to the first index whose running sum exceeds
// p; it returns the index and that sum, or len(order) when none does.
// Four at a time while the sum stays at most p.
func cumPastFrom(order []int32, counts []int32, p, i, cum int) (int, int) {
	for ; i+4 <= len(order); i += 4 {
		o := order[i : i+4 : i+4]
		c := int(counts[o[0]]) + int(counts[o[1]]) + int(counts[o[2]]) + int(counts[o[3]])
		if cum+c > p {
			break
		}
		cum += c
	}
	for ; i < len(order); i++ {
		if cum += int(counts[order[i]]); cum > p {
			return i, cum
		}
	}
	return i, cum
}

// cumPastBatch is cumPastFrom's walk of four at a time from the start,
// for four resamples together, each with its own p: it stops at the first
// four indexes that would take a sum past its p, and returns where it
// stopped and the sums of the counts before it, for cumPastFrom to go on
// from.
func cumPastBatch(order []int32, counts *[4][]int32, p *[4]int) (int, [4]int) {
	c0, c1, c2, c3 := counts[0], counts[1], counts[2], counts[3]
	p0, p1, p2, p3 := p[0], p[1], p[2], p[3]
	var s0, s1, s2, s3 int
	i := 0
	for ; i+4 <= len(order); i += 4 {
		o := order[i : i+4 : i+4]
		u0, u1, u2, u3 := o[0], o[1], o[2], o[3]
		a := s0 + int(c0[u0]) + int(c0[u1]) + int(c0[u2]) + int(c0[u3])
		b := s1 + int(c1[u0]) + int(c1[u1]) + int(c1[u2]) + int(c1[u3])
		c := s2 + int(c2[u0]) + int(c2[u1]) + int(c2[u2]) + int(c2[u3])
		d := s3 + int(c3[u0]) + int(c3[u1]) + int(c3[u2]) + int(c3[u3])
		if a > p0 || b > p1 || c > p2 || d > p3 {
			break
		}
		s0, s1, s2, s3 = a, b, c, d
	}
	return i, [4]int{s0, s1, s2, s3}
}

// cumPastDownFrom is cumPastFrom walking down from index i, cum the sum
// of the counts after it: the last index whose running sum from the top
// exceeds p, or −1 when none does.
func cumPastDownFrom(order []int32, counts []int32, p, i, cum int) (int, int) {
	for ; i >= 3; i -= 4 {
		o := order[i-3 : i+1 : i+1]
		c := int(counts[o[0]]) + int(counts[o[1]]) + int(counts[o[2]]) + int(counts[o[3]])
		if cum+c > p {
			break
		}
		cum += c
	}
	for ; i >= 0; i-- {
		if cum += int(counts[order[i]]); cum > p {
			return i, cum
		}
	}
	return i, cum
}

// cumPastDownBatch is cumPastBatch from the end, for cumPastDownFrom.
func cumPastDownBatch(order []int32, counts *[4][]int32, p *[4]int) (int, [4]int) {
	c0, c1, c2, c3 := counts[0], counts[1], counts[2], counts[3]
	p0, p1, p2, p3 := p[0], p[1], p[2], p[3]
	var s0, s1, s2, s3 int
	i := len(order) - 1
	for ; i >= 3; i -= 4 {
		o := order[i-3 : i+1 : i+1]
		u0, u1, u2, u3 := o[0], o[1], o[2], o[3]
		a := s0 + int(c0[u0]) + int(c0[u1]) + int(c0[u2]) + int(c0[u3])
		b := s1 + int(c1[u0]) + int(c1[u1]) + int(c1[u2]) + int(c1[u3])
		c := s2 + int(c2[u0]) + int(c2[u1]) + int(c2[u2]) + int(c2[u3])
		d := s3 + int(c3[u0]) + int(c3[u1]) + int(c3[u2]) + int(c3[u3])
		if a > p0 || b > p1 || c > p2 || d > p3 {
			break
		}
		s0, s1, s2, s3 = a, b, c, d
	}
	return i, [4]int{s0, s1, s2, s3}
}

// PrefixSums returns the running sums of a series' known values and of
// their count (unknowns count 0), for block resamples.
func PrefixSums(values []float64) (sum []float64, known []int32) {
	sum = make([]float64, len(values)+1)
	known = make([]int32, len(values)+1)
	for i, v := range values {
		sum[i+1], known[i+1] = sum[i], known[i]
		if !math.IsNaN(v) {
			sum[i+1] += v
			known[i+1]++
		}
	}
	return sum, known
}

// BlockMean is the resample's mean over its blocks: O(blocks), not O(n).
// It returns NaN when the blocks hold no known value.
func BlockMean(spans [][2]int32, sum []float64, known []int32) (mean float64, total int) {
	var s float64
	for _, b := range spans {
		s += sum[b[1]] - sum[b[0]]
		total += int(known[b[1]] - known[b[0]])
	}
	if total == 0 {
		return math.NaN(), 0
	}
	return s / float64(total), total
}

// ResampledMean returns the mean of the series' known values in the
// resample.
func ResampledMean(values []float64, counts []int32, total int) float64 {
	if total == 0 {
		return math.NaN()
	}
	var s float64
	for i, v := range values {
		if c := counts[i]; c != 0 && !math.IsNaN(v) {
			s += float64(c) * v
		}
	}
	return s / float64(total)
}

// PercentileInterval returns the equal-tailed percentile interval of a sorted
// replicate distribution.
func PercentileInterval(sorted []float64, alpha float64) (lo, hi float64) {
	if len(sorted) == 0 {
		return math.Inf(-1), math.Inf(1)
	}
	return Quantile(sorted, alpha/2), Quantile(sorted, 1-alpha/2)
}

// TwoSidedP is the bootstrap p-value for "no difference": twice the smaller
// share of replicates on either side of zero, with the +1 correction of
// Davison & Hinkley (1997, Bootstrap Methods, eq. 4.11) so it is never 0.
func TwoSidedP(sortedAbs []float64) float64 {
	if len(sortedAbs) == 0 {
		return math.NaN()
	}
	le, ge := countLE(sortedAbs, 0), countGE(sortedAbs, 0)
	return min(1, 2*float64(min(le, ge)+1)/float64(len(sortedAbs)+1))
}

func countLE(sorted []float64, t float64) int {
	i, _ := slices.BinarySearchFunc(sorted, t, func(v, t float64) int {
		if v <= t {
			return -1
		}
		return 1
	})
	return i
}

func countGE(sorted []float64, t float64) int {
	i, _ := slices.BinarySearchFunc(sorted, t, func(v, t float64) int {
		if v < t {
			return -1
		}
		return 1
	})
	return len(sorted) - i
}

// TailP is the one-sided bootstrap p-value that the difference is not
// beyond threshold t in the failing direction: for a "<" gate the share of
// replicates ≤ t, for ">" the share ≥ t (+1 corrected).
func TailP(sorted []float64, t float64, upper bool) float64 {
	if len(sorted) == 0 {
		return 1
	}
	var c int
	if upper {
		c = countLE(sorted, t)
	} else {
		c = countGE(sorted, t)
	}
	return min(1, float64(c+1)/float64(len(sorted)+1))
}
