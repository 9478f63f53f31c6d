package attribution

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPartitionOwnsByRank: on random claims, including claims of one stage
// that overlap or abut and claims of StageOther, partition gives each
// instant of the request to the highest-ranked stage claiming it
// (stagePriority), the rest to StageOther, with its segments and gaps the
// stretches of constant owner in time order: as found unit by unit.
func TestPartitionOwnsByRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const from, to = 10, 90
	for trial := range 5000 {
		ivs := make([]interval, rng.IntN(7))
		for i := range ivs {
			a := int64(rng.IntN(100))
			ivs[i] = interval{Stage(rng.IntN(int(NumStages))), a, a + int64(rng.IntN(40))}
		}
		// Unit by unit: each instant's owner.
		owners := make([]Stage, 0, to-from)
		var want [NumStages]int64
		for x := int64(from); x < to; x++ {
			best, bestRank := StageOther, 0
			for _, iv := range ivs {
				if iv.from <= x && x < iv.to && iv.stage != StageOther && stageRank[iv.stage] > bestRank {
					best, bestRank = iv.stage, stageRank[iv.stage]
				}
			}
			owners = append(owners, best)
			want[best]++
		}
		var wantSegs []StageSegment
		var wantGaps []Gap
		for i := 0; i < len(owners); {
			j := i
			for j < len(owners) && owners[j] == owners[i] {
				j++
			}
			a, b := from+int64(i), from+int64(j)
			if owners[i] != StageOther {
				wantSegs = append(wantSegs, StageSegment{owners[i], a, b})
			} else {
				g := Gap{From: a, To: b, Before: StageOther, After: StageOther}
				if i > 0 {
					g.Before = owners[i-1]
				}
				if j < len(owners) {
					g.After = owners[j]
				}
				wantGaps = append(wantGaps, g)
			}
			i = j
		}
		got, gaps, segs, _ := partition(from, to, ivs, nil)
		if got != want || !slices.Equal(segs, wantSegs) || !slices.Equal(gaps, wantGaps) {
			t.Fatalf("trial %d, claims %v:\ngot %v %v %v\nwant %v %v %v", trial, ivs, got, segs, gaps, want, wantSegs, wantGaps)
		}
	}
}
