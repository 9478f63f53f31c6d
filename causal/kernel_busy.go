package causal

import (
	"cmp"
	"math"
	"slices"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// A source's busy time, streamed: the union of its kernels' intervals is
// merged as the sweeps over a target's rows (overlaps, stepShares) read
// it, from the source's kernel lists, and never held whole. On a run of
// millions of kernels one source's union is as large as the target's rows.

// busyStream yields disjoint intervals in start order.
type busyStream interface {
	next() (interval, bool)
}

// busySlice streams intervals already merged.
type busySlice struct {
	iv []interval
	i  int
}

func (s *busySlice) next() (interval, bool) {
	if s.i == len(s.iv) {
		return interval{}, false
	}
	s.i++
	return s.iv[s.i-1], true
}

// busyMerge is the union of ops' intervals from lists of op indices, each
// sorted by start (a tenant's kernels on each of its devices), taken in
// start order: an op that starts at or before the end of the interval being
// built extends it, an empty one is skipped. Ties in start across lists
// may come in any order; the union is the same set.
//
// The ops are read in start order, which is their order in the trace: the
// pages of the table the merge has passed are dropped behind it when the
// process is over its memory budget (spill.Behind).
type busyMerge struct {
	ops    []ingest.GPUOp
	lists  [][]int32
	pos    []int
	behind spill.Behind
}

func newBusyMerge(ops []ingest.GPUOp, lists ...[]int32) *busyMerge {
	return &busyMerge{ops: ops, lists: lists, pos: make([]int, len(lists)), behind: spill.DropBehind(ops)}
}

// head is the list whose next op starts first (-1: all read).
func (m *busyMerge) head() int {
	best := -1
	for l, list := range m.lists {
		if m.pos[l] == len(list) {
			continue
		}
		if best < 0 || m.ops[list[m.pos[l]]].Start < m.ops[m.lists[best][m.pos[best]]].Start {
			best = l
		}
	}
	return best
}

func (m *busyMerge) next() (interval, bool) {
	var cur interval
	have := false
	for {
		l := m.head()
		if l < 0 {
			return cur, have
		}
		k := m.lists[l][m.pos[l]]
		m.behind.Passed(int(k))
		op := &m.ops[k]
		a, b := op.Start, op.End
		if have && a > cur.end {
			return cur, true
		}
		m.pos[l]++
		if b <= a {
			continue
		}
		if !have {
			cur, have = interval{a, b}, true
			continue
		}
		cur.end = max(cur.end, b)
	}
}

// busyWindow reads a busyStream through a window that sweeps forward: the
// intervals that may still meet a query starting at or after the last one
// asked about.
type busyWindow struct {
	src  busyStream
	buf  []interval
	done bool
}

// covered is how much of [a, b) the stream covers. Successive calls must
// come with a non-decreasing a.
func (w *busyWindow) covered(a, b int64) int64 {
	drop := 0
	for {
		for drop < len(w.buf) && w.buf[drop].end <= a {
			drop++
		}
		if drop < len(w.buf) || !w.pull() {
			break
		}
	}
	if drop > 0 {
		w.buf = w.buf[:copy(w.buf, w.buf[drop:])]
	}
	var c int64
	for l := 0; ; l++ {
		if l == len(w.buf) && !w.pull() {
			break
		}
		if w.buf[l].start >= b {
			break
		}
		c += max(0, min(b, w.buf[l].end)-max(a, w.buf[l].start))
	}
	return c
}

// pull appends the stream's next interval to the window.
func (w *busyWindow) pull() bool {
	if w.done {
		return false
	}
	iv, ok := w.src.next()
	if !ok {
		w.done = true
		return false
	}
	w.buf = append(w.buf, iv)
	return true
}

// busyOf streams source s's work: on its device, or on all of them
// (device -1).
func (g *tenantKernels) busyOf(ops []ingest.GPUOp, s busyKey) busyStream {
	if s.device >= 0 {
		return newBusyMerge(ops, g.kernels[s])
	}
	var lists [][]int32
	for _, k := range g.keys {
		if k.tenant == s.tenant {
			lists = append(lists, g.kernels[k])
		}
	}
	return newBusyMerge(ops, lists...)
}

// overlaps is, for each row (sorted by start), the share of its interval the
// sorted disjoint intervals cover.
func overlaps(rows []kernelRow, busy []interval) []float64 {
	return overlapsOf(rows, &busySlice{iv: busy})
}

// overlapsOf is overlaps of streamed intervals: one forward sweep. The
// overlaps are a table (spill.Slice) the caller gives back.
func overlapsOf(rows []kernelRow, busy busyStream) []float64 {
	x := spill.Make[float64](len(rows))
	w := busyWindow{src: busy}
	for r := range rows {
		c := w.covered(rows[r].start, rows[r].start+rows[r].dur)
		x[r] = float64(c) / float64(rows[r].dur)
	}
	return x
}

// stepShares is the share of each step's window — from the first of the
// rows (sorted by start) in the step to the end of the last — that the
// streamed disjoint busy intervals cover, indexed by step (NaN for a step
// with none of the rows). It is what the SpecStep fit reads (overlapSet), a
// float a step, not a copy in each row.
func stepShares(rows []kernelRow, busy busyStream) []float64 {
	win := stepWindows(rows)
	// The windows by start, for one sweep of the stream.
	steps := make([]int32, 0, len(win))
	last := int32(-1)
	for s := range win {
		steps = append(steps, s)
		last = max(last, s)
	}
	slices.SortFunc(steps, func(a, b int32) int {
		return cmp.Or(cmp.Compare(win[a].start, win[b].start), cmp.Compare(a, b))
	})
	share := make([]float64, last+1)
	for s := range share {
		share[s] = math.NaN()
	}
	bw := busyWindow{src: busy}
	for _, s := range steps {
		w := win[s]
		share[s] = float64(bw.covered(w.start, w.end)) / float64(w.end-w.start)
	}
	return share
}

// stepWindows is each step's window: from the first of the rows in it to
// the end of the last.
func stepWindows(rows []kernelRow) map[int32]interval {
	win := map[int32]interval{}
	for _, r := range rows {
		if r.step < 0 {
			continue
		}
		w, ok := win[r.step]
		if !ok {
			w = interval{r.start, r.start + r.dur}
		}
		w.start, w.end = min(w.start, r.start), max(w.end, r.start+r.dur)
		win[r.step] = w
	}
	return win
}
