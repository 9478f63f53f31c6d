package causal

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// referenceUnion is the union of the listed ops' intervals, merged from one
// list sorted by start (how the kernel view built a source's busy time
// before it streamed it).
func referenceUnion(ops []ingest.GPUOp, lists ...[]int32) []interval {
	var idx []int32
	for _, l := range lists {
		idx = append(idx, l...)
	}
	slices.SortFunc(idx, func(a, b int32) int { return int(ops[a].Start - ops[b].Start) })
	var out []interval
	for _, i := range idx {
		a, b := ops[i].Start, ops[i].End
		if b <= a {
			continue
		}
		if n := len(out); n > 0 && a <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, b)
			continue
		}
		out = append(out, interval{a, b})
	}
	return out
}

// busyOps is ops on three devices: back to back, overlapping, touching,
// empty, long ones spanning many others, and ties in start across devices.
func busyOps(rng *rand.Rand) ([]ingest.GPUOp, [][]int32) {
	var ops []ingest.GPUOp
	lists := make([][]int32, 3)
	for d := range lists {
		for at := int64(0); at < 2e6; {
			dur := int64(rng.IntN(3000))
			if rng.IntN(50) == 0 {
				dur = 40_000 // spans many
			}
			lists[d] = append(lists[d], int32(len(ops)))
			ops = append(ops, ingest.GPUOp{Start: at, End: at + dur, Device: int16(d)})
			switch rng.IntN(4) {
			case 0: // overlaps the next
				at += max(1, dur/2)
			case 1: // touches it
				at += dur
			default:
				at += dur + int64(rng.IntN(4000))
			}
			at -= at % 10 // ties across devices
		}
		slices.SortFunc(lists[d], func(a, b int32) int { return int(ops[a].Start - ops[b].Start) })
	}
	return ops, lists
}

// The streamed busy time is the union the kernel view built before, interval
// for interval, for one device and for several; a sweep of queries in start
// order covers what the whole union covers.
func TestBusyMergeMatchesUnion(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 11))
	for trial := 0; trial < 20; trial++ {
		ops, lists := busyOps(rng)
		for _, ls := range [][][]int32{lists[:1], lists} {
			want := referenceUnion(ops, ls...)
			var got []interval
			m := newBusyMerge(ops, ls...)
			for iv, ok := m.next(); ok; iv, ok = m.next() {
				got = append(got, iv)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d, %d lists: %d intervals, want %d", trial, len(ls), len(got), len(want))
			}
			w := busyWindow{src: newBusyMerge(ops, ls...)}
			for a := int64(0); a < 2.1e6; a += int64(rng.IntN(5000)) {
				b := a + int64(1+rng.IntN(60_000))
				if c, ref := w.covered(a, b), coveredBy(want, a, b); c != ref {
					t.Fatalf("trial %d, %d lists: [%d, %d) covered %d, want %d", trial, len(ls), a, b, c, ref)
				}
			}
		}
	}
}

// The step-level overlap of each row, swept over the streamed union, is the
// share of its step's window the whole union covers, window by window.
func TestStepSharesStreamed(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 12))
	ops, lists := busyOps(rng)
	busy := referenceUnion(ops, lists...)
	var rows []kernelRow
	step := int32(0)
	for at := int64(0); at < 2e6; at += int64(1 + rng.IntN(2000)) {
		r := kernelRow{start: at, dur: int64(1 + rng.IntN(20_000)), step: -1}
		if rng.IntN(5) > 0 {
			// Steps interleave: a row may join one of the last few.
			r.step = max(0, step-int32(rng.IntN(3)))
		}
		if rng.IntN(7) == 0 {
			step++
		}
		rows = append(rows, r)
	}
	x := overlaps(rows, busy)
	got := rowShares(rows, [][]float64{x}, [][]float64{stepShares(rows, newBusyMerge(ops, lists...))})[0]
	win := stepWindows(rows)
	for i, r := range rows {
		want := x[i]
		if r.step >= 0 {
			w := win[r.step]
			want = float64(coveredBy(busy, w.start, w.end)) / float64(w.end-w.start)
		}
		if got[i] != want {
			t.Fatalf("row %d (step %d): %v, want %v", i, r.step, got[i], want)
		}
	}
}
