package synth

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergeRunsIsStableSort checks mergeRuns against a stable sort by time
// (what ingest.(*Trace).Sort does) on records in up to maxMergeRuns sorted
// runs — odd and even lengths, times drawn from few values so that ties
// within and across runs are common — and that it declines more runs,
// returning them as they are.
func TestMergeRunsIsStableSort(t *testing.T) {
	type rec struct {
		at int64
		id int
	}
	key := func(r *rec) int64 { return r.at }
	rng := rand.New(rand.NewPCG(3, 2))
	for trial := range 2000 {
		runs := 1 + rng.IntN(maxMergeRuns+4)
		levels := 1 + rng.IntN(40)
		var recs []rec
		for range runs {
			run := make([]rec, rng.IntN(30))
			for i := range run {
				run[i].at = int64(rng.IntN(levels)) - 5
			}
			slices.SortFunc(run, func(a, b rec) int { return cmp.Compare(a.at, b.at) })
			recs = append(recs, run...)
		}
		for i := range recs {
			recs[i].id = i
		}
		want := slices.Clone(recs)
		slices.SortStableFunc(want, func(a, b rec) int { return cmp.Compare(a.at, b.at) })
		descents := 0
		for i := 1; i < len(recs); i++ {
			if recs[i].at < recs[i-1].at {
				descents++
			}
		}
		got, merged := mergeRuns(slices.Clone(recs), key)
		switch {
		case merged != (descents < maxMergeRuns):
			t.Fatalf("trial %d: %d runs, merged %v", trial, descents+1, merged)
		case merged && !slices.Equal(got, want):
			t.Fatalf("trial %d: merged %v, stable sort %v", trial, got, want)
		case !merged && !slices.Equal(got, recs):
			t.Fatalf("trial %d: declined but reordered", trial)
		}
	}
}
