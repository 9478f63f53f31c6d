package nsys

import (
	"cmp"
	"math"
	"slices"

	"github.com/llmprof/llmprof/ingest"
)

// Stats summarizes a set of values (durations in ns, or sizes in bytes) the
// way nsys stats does: total, count, mean, median, min, max and the sample
// standard deviation.
type Stats struct {
	Total  int64   `json:"total"`
	Count  int     `json:"count"`
	Avg    float64 `json:"avg"`
	Med    float64 `json:"med"`
	Min    int64   `json:"min"`
	Max    int64   `json:"max"`
	StdDev float64 `json:"stddev"`
}

// summarize computes Stats of v, sorting v in place. The median of an even
// count is the mean of the two middle values; the standard deviation is the
// sample one (n−1 in the denominator), and 0 for a single value — both as
// nsys prints them (a two-call row of a real osrt_sum, min 2,971,823 and max
// 333,015,608, shows StdDev 233,376,198.5 = |a−b|/√2). The variance is
// computed in two passes around the mean, which keeps full precision for
// nanosecond values in the 1e10 range where Σx² would not. st sorts, and
// keeps its buffer for the next group of the report.
func (st *sorter) summarize(v []int64) Stats {
	if len(v) == 0 {
		return Stats{}
	}
	st.sort(v)
	s := Stats{Count: len(v), Min: v[0], Max: v[len(v)-1]}
	for _, x := range v {
		s.Total += x
	}
	s.Avg = float64(s.Total) / float64(len(v))
	if n := len(v); n%2 == 1 {
		s.Med = float64(v[n/2])
	} else {
		s.Med = (float64(v[n/2-1]) + float64(v[n/2])) / 2
	}
	if len(v) > 1 {
		var ss float64
		for _, x := range v {
			d := float64(x) - s.Avg
			ss += d * d
		}
		s.StdDev = math.Sqrt(ss / float64(len(v)-1))
	}
	return s
}

// radixMin is the length from which a sorter sorts by radix.
const radixMin = 1 << 10

// sorter sorts int64s ascending. Summaries sort millions of durations (one
// per kernel), which a least-significant-digit radix sort does in a few
// linear passes instead of n log n comparisons; a byte that every value
// shares (the high bytes of nanosecond durations) costs only its count. buf
// is the radix sort's scratch, kept for the next sort: allocated per group
// it would be garbage the size of every group together, which the collector
// leaves alone while the model dominates the heap.
type sorter struct{ buf []int64 }

func (st *sorter) sort(v []int64) {
	if len(v) < radixMin {
		slices.Sort(v)
		return
	}
	var counts [8][256]int
	for _, x := range v {
		u := uint64(x) ^ 1<<63 // order the signed values as unsigned
		for d := range 8 {
			counts[d][byte(u>>(8*d))]++
		}
	}
	if cap(st.buf) < len(v) {
		st.buf = make([]int64, len(v))
	}
	src, dst := v, st.buf[:len(v)]
	for d := range 8 {
		c := &counts[d]
		if c[byte((uint64(v[0])^1<<63)>>(8*d))] == len(v) {
			continue // every value has this byte
		}
		off := 0
		for b := range c {
			off, c[b] = off+c[b], off
		}
		shift := 8 * d
		for _, x := range src {
			b := byte((uint64(x) ^ 1<<63) >> shift)
			dst[c[b]] = x
			c[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &v[0] {
		copy(v, src)
	}
}

// percent is part/whole in percent (0 when whole is 0).
func percent(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) * 100 / float64(whole)
}

// round1 rounds to one decimal, half away from zero, as SQLite's round(x, 1)
// in nsys's report queries does.
func round1(x float64) float64 { return math.Round(x*10) / 10 }

// groups collects values by key in first-seen order.
type groups[K comparable] struct {
	index map[K]int
	keys  []K
	vals  [][]int64
}

func newGroups[K comparable]() *groups[K] { return &groups[K]{index: map[K]int{}} }

func (g *groups[K]) add(k K, v int64) {
	i, ok := g.index[k]
	if !ok {
		i = len(g.keys)
		g.index[k] = i
		g.keys = append(g.keys, k)
		g.vals = append(g.vals, nil)
	}
	g.vals[i] = append(g.vals[i], v)
}

// byID collects values by a StrID key in two passes, so that the values of
// ten million ops take one exact allocation instead of a growing slice per
// key. key reports false for items that do not count.
func byID(n int, key func(i int) (ingest.StrID, bool), val func(i int) int64) (ids []ingest.StrID, vals [][]int64) {
	index := map[ingest.StrID]int{}
	var counts []int
	total := 0
	for i := range n {
		k, ok := key(i)
		if !ok {
			continue
		}
		j, seen := index[k]
		if !seen {
			j = len(ids)
			index[k] = j
			ids = append(ids, k)
			counts = append(counts, 0)
		}
		counts[j]++
		total++
	}
	backing := make([]int64, total)
	vals = make([][]int64, len(ids))
	off := 0
	for j, c := range counts {
		vals[j] = backing[off : off : off+c]
		off += c
	}
	for i := range n {
		if k, ok := key(i); ok {
			j := index[k]
			vals[j] = append(vals[j], val(i))
		}
	}
	return ids, vals
}

// byTotal orders summary rows as nsys does: total descending, then count,
// then name.
func byTotal(ta, tb int64, na, nb int, sa, sb string) int {
	return cmp.Or(cmp.Compare(tb, ta), cmp.Compare(na, nb), cmp.Compare(sa, sb))
}
