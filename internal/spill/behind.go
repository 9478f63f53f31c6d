package spill

import (
	"math"
	"sync/atomic"
	"unsafe"
)

// A Behind takes a spilled table's pages out of the process behind a pass
// that reads or writes the table in index order, when the process is over
// the governor's mark: what the pass has left behind goes before the pass
// maps much more.
//
// The governor alone cannot keep such a pass within the budget. It reads
// the resident set once a tick, and a tick comes 10-20 ms late while the
// analysis holds every processor, while a pass over a table already in the
// page cache maps it at gigabytes a second: on bench/scale.sh's 112 MB run
// the tenant kernel view's sweeps over the 50 MiB GPU-op table mapped it
// whole within 5 ms, on top of a heap at its ceiling, and the run peaked
// 10-20% over its budget (docs/design.md, "Dropping behind a pass"). The
// pass itself knows when it has moved on: every behindStep of the table it
// reads the resident set and, over the mark, drops the whole pages behind
// it.
//
// A page dropped is in the page cache still (mapping.drop): read again, by
// this pass or another, it is faulted in again, never lost. The zero Behind
// does nothing, and so does one for a table on the heap.
type Behind struct {
	mem  []byte // the table's bytes, nil when it is not in a spill file
	size int    // bytes an element
	// base is the table's offset in its mapping: pages are dropped whole,
	// the mapping's pages.
	base int
	done int // bytes of mem from base on dropped already (a page multiple from the mapping's start)
	next int // the index from which Passed looks again
	step int // elements between two looks
}

// behindStep is how much of a table a pass reads between two looks at the
// resident set under a budget: the least table that is spilled (threshold),
// a 32nd of the budget and at most MinBytes. A look is one read of
// /proc/self/statm, a few microseconds.
func behindStep(budget int64) int { return int(threshold(budget)) }

// DropBehind returns a Behind for a pass over s. s must stay in use (not
// given back, grown or freed) while the Behind is.
func DropBehind[T any](s []T) Behind {
	size := int(unsafe.Sizeof(*new(T)))
	budget := current()
	if cap(s) == 0 || size == 0 || budget <= 0 {
		return Behind{next: math.MaxInt}
	}
	state.mu.Lock()
	var mem []byte
	i, base := mappingHolding(unsafe.Pointer(unsafe.SliceData(s[:1])))
	if i >= 0 {
		mem = state.maps[i].mem
	}
	state.mu.Unlock()
	if mem == nil {
		return Behind{next: math.MaxInt}
	}
	// Only the table's own bytes, cap(s) of them, are ever dropped.
	end := min(len(mem), base+cap(s)*size)
	step := max(behindStep(budget)/size, 1)
	return Behind{mem: mem[:end], size: size, base: base, next: step, step: step}
}

// Passed says the pass is at element i: elements before it are not read
// again by this pass. Cheap enough for every element.
func (b *Behind) Passed(i int) {
	if i < b.next {
		return
	}
	b.look(i)
}

func (b *Behind) look(i int) {
	if b.mem == nil {
		b.next = math.MaxInt
		return
	}
	b.next = i + b.step
	if !overMark() {
		return
	}
	page := pageSize
	from := (b.base + b.done + page - 1) / page * page
	to := min(b.base+i*b.size, len(b.mem)) / page * page
	if to <= from {
		return
	}
	dropRange(b.mem[from:to])
	b.done = to - b.base
	behindDrops.Add(1)
	behindBytes.Add(int64(to - from))
}

// overMark reports whether the process is over the governor's mark now: a
// fresh read of its resident set, not the governor's of the last tick. A
// variable for the tests.
var overMark = func() bool {
	mark := highMark.Load()
	return mark > 0 && readResident() > mark
}

// highMark is the governor's mark (pacing.marks) as of its last tick, 0
// before the first: past it, a pass drops behind itself.
var highMark atomic.Int64

// What passes dropped behind them (Stats.BehindDrops, BehindBytes).
var behindDrops, behindBytes atomic.Int64
