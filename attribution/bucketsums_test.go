package attribution

import (
	"testing"

	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// The requests' token sums are one table for a run whose requests are all
// summed by stages, a spill table while spilling is on (off the heap the
// collector marks), and two for one that mixes them with
// requests summed over every bucket; each request reads back its own sums.
func TestBucketSumsChunks(t *testing.T) {
	spilltest.Enable(t)
	// Tables of 8 KiB and more in files.
	spill.Budget(64 << 10)
	const n = 5000
	sums := func(i int) (all, first [NumBuckets]int64) {
		for b := range NumBuckets {
			all[b], first[b] = int64(i*100+int(b)), int64(i*100+int(b)+50)
		}
		return all, first
	}
	for _, c := range []struct {
		name   string
		wide   func(i int) bool // whether request i is summed over every bucket
		chunks int
		mapped int64 // bytes in spill files, at least
	}{
		{"stages", func(int) bool { return false }, 1, 8 * 2 * int64(len(stageOnlyBuckets)) * n},
		{"every bucket", func(int) bool { return true }, 1, 8 * 2 * int64(NumBuckets) * n},
		{"mixed", func(i int) bool { return i%7 == 3 }, 2, 0},
		{"none", func(int) bool { return false }, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := spill.Read().Mapped
			s := newBucketSums(n)
			for i := range n {
				if c.name == "none" {
					s.set(i, nil, nil, nil)
					continue
				}
				all, first := sums(i)
				bs := stageOnlyBuckets[:]
				if c.wide(i) {
					bs = allBuckets[:]
				}
				s.set(i, bs, &all, &first)
			}
			if len(s.vals) != c.chunks {
				t.Errorf("%d chunks, want %d", len(s.vals), c.chunks)
			}
			if got := spill.Read().Mapped - before; got < c.mapped {
				t.Errorf("%d bytes of sums in spill files, want at least %d", got, c.mapped)
			}
			for i := range n {
				all, first, bs := s.of(i)
				if c.name == "none" {
					if bs != nil {
						t.Fatalf("request %d: buckets %v, want none", i, bs)
					}
					continue
				}
				wantAll, wantFirst := sums(i)
				if want := len(stageOnlyBuckets); c.wide(i) && len(bs) != int(NumBuckets) || !c.wide(i) && len(bs) != want {
					t.Fatalf("request %d: %d buckets", i, len(bs))
				}
				for j, b := range bs {
					if all[j] != wantAll[b] || first[j] != wantFirst[b] {
						t.Fatalf("request %d bucket %v: sums %d, %d, want %d, %d", i, b, all[j], first[j], wantAll[b], wantFirst[b])
					}
				}
			}
		})
	}
}
