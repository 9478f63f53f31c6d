// Package radix sorts by unsigned integer keys in a few linear passes (a
// least-significant-digit radix sort) where a comparison sort of millions of
// records would cost n log n calls of a comparison: nsys's summaries sort
// every kernel's duration, ingest's launch join every GPU op's correlation
// key. It sits beside the pipeline, like internal/orderstat.
package radix

import (
	"cmp"
	"slices"
)

// small is the length below which Sort uses a comparison sort.
const small = 1 << 10

// Sort sorts v by key, ascending and stable (records with equal keys keep
// their order), using buf as scratch. It returns the scratch, grown when it
// was too short, so that a loop of sorts allocates it once. A byte that
// every key shares costs one counting pass and no move: nanosecond
// durations and (process, correlation) keys differ in a few low bytes.
func Sort[T any](v, buf []T, key func(*T) uint64) []T {
	if len(v) < small {
		slices.SortStableFunc(v, func(a, b T) int { return cmp.Compare(key(&a), key(&b)) })
		return buf
	}
	var counts [8][256]int
	for i := range v {
		k := key(&v[i])
		for d := range 8 {
			counts[d][byte(k>>(8*d))]++
		}
	}
	if cap(buf) < len(v) {
		buf = make([]T, len(v))
	}
	src, dst := v, buf[:len(v)]
	first := key(&v[0])
	for d := range 8 {
		c := &counts[d]
		shift := 8 * d
		if c[byte(first>>shift)] == len(v) {
			continue // every key has this byte
		}
		off := 0
		for b := range c {
			off, c[b] = off+c[b], off
		}
		for i := range src {
			b := byte(key(&src[i]) >> shift)
			dst[c[b]] = src[i]
			c[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &v[0] {
		copy(v, src)
	}
	return buf
}
