package attribution

import (
	"math"
	"testing"

	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// The requests' token sums keep only the buckets where a sum is not zero,
// packed in one table (a spill table while spilling is on, off the heap the
// collector marks), and each request reads back its own sums: every bucket
// it has time in with its two sums, and none other.
func TestBucketSumsSparse(t *testing.T) {
	spilltest.Enable(t)
	// Tables of 8 KiB and more in files.
	spill.Budget(64 << 10)
	const n = 5000
	// Request i's sums: bucket b has time when bit b of its pattern is set
	// (All, First or both), the patterns cycling through many sets.
	sums := func(i int, bs []Bucket) (all, first [NumBuckets]int64) {
		pattern := uint32(i * 2654435761)
		for _, b := range bs {
			switch pattern >> (2 * (b % 16)) & 3 {
			case 1:
				all[b] = int64(i*100 + int(b) + 1)
			case 2:
				first[b] = -int64(i*100 + int(b) + 1)
			case 3:
				all[b], first[b] = int64(i*100+int(b)+1), int64(i*100+int(b)+51)
			}
		}
		return all, first
	}
	for _, c := range []struct {
		name string
		wide func(i int) bool // whether request i is summed over every bucket
	}{
		{"stages", func(int) bool { return false }},
		{"every bucket", func(int) bool { return true }},
		{"mixed", func(i int) bool { return i%7 == 3 }},
		{"none", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := spill.Read().Mapped
			s := newBucketSums(n)
			nonzero := 0
			for i := range n {
				if c.wide == nil {
					s.set(i, nil, nil, nil)
					continue
				}
				bs := stageOnlyBuckets[:]
				if c.wide(i) {
					bs = allBuckets[:]
				}
				all, first := sums(i, bs)
				for b := range NumBuckets {
					if all[b] != 0 || first[b] != 0 {
						nonzero++
					}
				}
				s.set(i, bs, &all, &first)
			}
			if c.wide != nil && len(s.sets) != math.MaxUint8 && c.name != "stages" {
				t.Errorf("%d bucket sets numbered, want all %d", len(s.sets), math.MaxUint8)
			}
			// Packed: two sums a nonzero bucket, but for the requests
			// past the 255th set (numbers 0 to 254), kept over every bucket.
			if c.name == "stages" && len(s.vals) != 2*nonzero {
				t.Errorf("%d sums kept, want %d", len(s.vals), 2*nonzero)
			}
			if got := spill.Read().Mapped - before; c.wide != nil && got < int64(8*len(s.vals)) {
				t.Errorf("%d bytes of sums in spill files, want at least %d", got, 8*len(s.vals))
			}
			for i := range n {
				all, first, bs := s.of(i)
				if c.wide == nil {
					if bs != nil || all != nil || first != nil {
						t.Fatalf("request %d: buckets %v, want none", i, bs)
					}
					continue
				}
				cand := stageOnlyBuckets[:]
				if c.wide(i) {
					cand = allBuckets[:]
				}
				wantAll, wantFirst := sums(i, cand)
				var got [NumBuckets]bool
				for j, b := range bs {
					got[b] = true
					if all[j] != wantAll[b] || first[j] != wantFirst[b] {
						t.Fatalf("request %d bucket %v: sums %d, %d, want %d, %d", i, b, all[j], first[j], wantAll[b], wantFirst[b])
					}
				}
				for b := range NumBuckets {
					if !got[b] && (wantAll[b] != 0 || wantFirst[b] != 0) {
						t.Fatalf("request %d: bucket %v with sums %d, %d missing from %v", i, b, wantAll[b], wantFirst[b], bs)
					}
					if got[b] && wantAll[b] == 0 && wantFirst[b] == 0 && len(bs) != int(NumBuckets) {
						t.Fatalf("request %d: bucket %v kept with no time, in %v", i, b, bs)
					}
				}
				if len(all) != cap(all) || len(first) != cap(first) {
					t.Fatalf("request %d: sums not capped (%d/%d, %d/%d)", i, len(all), cap(all), len(first), cap(first))
				}
			}
		})
	}
}
