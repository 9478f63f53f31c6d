package synth

// The GPU trace is emitted engine by engine (each engine's steps in time
// order), so each of its tables is a few runs already in time order, one per
// engine. ingest.(*Trace).Sort would sort each whole table and move the
// records into place along the permutation's cycles (about 60% of
// GPUTraceWindow's time); mergeRuns puts them in the same order by merging
// the runs into a new table, reading and writing sequentially.

// mergeRuns returns recs in the order a stable sort by key gives (ingest's
// sortByTime: by time, ties in their present order) when recs is at most
// maxMergeRuns ascending runs: merged into a new slice, taking the earlier
// run's record on a tie (its index is smaller). With more runs it returns
// recs unchanged and false, for the caller to sort.
func mergeRuns[T any](recs []T, key func(*T) int64) ([]T, bool) {
	keys := make([]int64, len(recs))
	starts := []int{0}
	for i := range recs {
		keys[i] = key(&recs[i])
		if i > 0 && keys[i] < keys[i-1] {
			if len(starts) == maxMergeRuns {
				return recs, false
			}
			starts = append(starts, i)
		}
	}
	if len(starts) == 1 {
		return recs, true
	}
	ends := append(starts[1:len(starts):len(starts)], len(recs))
	next := append([]int(nil), starts...) // each run's next record
	out := make([]T, len(recs))
	for i := range out {
		best := -1
		var bestAt int64
		for r, j := range next {
			if j < ends[r] && (best < 0 || keys[j] < bestAt) {
				best, bestAt = r, keys[j]
			}
		}
		out[i] = recs[next[best]]
		next[best]++
	}
	return out, true
}

// maxMergeRuns is the most runs mergeRuns merges: more than a trace's
// engines, few enough that picking the next record by a scan of the runs
// stays cheaper than a sort.
const maxMergeRuns = 16
