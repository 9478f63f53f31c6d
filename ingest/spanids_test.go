package ingest

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// spanIDOf is the span ID whose table key is k.
func spanIDOf(k uint64) (id SpanID) {
	binary.LittleEndian.PutUint64(id[:], k)
	return id
}

// TestSpanIDTable: the table finds the span first put for each key and no
// span for a key never put, as a map does, for random keys and for keys
// that differ in a few bits only (low, high, or spread), filled to the
// most it is made for.
func TestSpanIDTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		key  func(i int) uint64
	}{
		{"random", func(int) uint64 { return rng.Uint64() | 1 }},
		{"sequential", func(i int) uint64 { return uint64(i + 1) }},
		{"high bits", func(i int) uint64 { return uint64(i+1) << 44 }},
		{"strided", func(i int) uint64 { return uint64(i+1) * 0x10001 << 8 }},
	} {
		for _, n := range []int{1, 15, 16, 1000, 50_000} {
			tab := NewSpanIDTable(n)
			want := map[uint64]int32{}
			keys := make([]uint64, 0, n)
			for i := 0; len(want) < n; i++ {
				k := tc.key(i)
				got, seen := tab.PutFirst(spanIDOf(k), int32(i))
				first, had := want[k]
				if seen != had || had && got != first || !had && got != int32(i) {
					t.Fatalf("%s, %d keys: put %#x as %d: got %d, %v; want the first %d, %v", tc.name, n, k, i, got, seen, first, had)
				}
				if !had {
					want[k] = int32(i)
					keys = append(keys, k)
				}
				// Again: the first stays.
				if got, seen := tab.PutFirst(spanIDOf(k), -1); !seen || got != want[k] {
					t.Fatalf("%s: put %#x again: got %d, %v; want %d", tc.name, k, got, seen, want[k])
				}
			}
			for _, k := range keys {
				if got, ok := tab.Get(spanIDOf(k)); !ok || got != want[k] {
					t.Fatalf("%s, %d keys: get %#x = %d, %v; want %d", tc.name, n, k, got, ok, want[k])
				}
			}
			for range 1000 {
				k := rng.Uint64() | 1<<63
				if _, put := want[k]; put {
					continue
				}
				if got, ok := tab.Get(spanIDOf(k)); ok {
					t.Fatalf("%s, %d keys: get %#x never put = %d", tc.name, n, k, got)
				}
			}
			if got, ok := tab.Get(SpanID{}); ok {
				t.Fatalf("%s, %d keys: get of the zero ID = %d", tc.name, n, got)
			}
		}
	}
}
