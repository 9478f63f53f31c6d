package attribution

import (
	"slices"
	"testing"
)

// stageOnlyBuckets holds every bucket stageSplit can add time to: each
// stage's bucket and what uncoveredBuckets gives for any stages present.
// summarizeTokens adds up a request that stageRuns sums over these alone,
// so a bucket missing here would silently lose its time.
func TestStageOnlyBuckets(t *testing.T) {
	has := func(b Bucket) bool { return slices.Contains(stageOnlyBuckets[:], b) }
	for st, b := range stageBucket {
		if !has(b) {
			t.Errorf("stage %v's bucket %v is not in stageOnlyBuckets", Stage(st), b)
		}
	}
	for p := range 1 << NumStages {
		present := uint8(p)
		before, after := (&Request{present: present}).uncoveredBuckets()
		if !has(before) || !has(after) {
			t.Errorf("present %b: uncoveredBuckets %v, %v not in stageOnlyBuckets", present, before, after)
		}
	}
}
