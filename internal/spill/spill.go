// Package spill keeps llmprof's largest tables within a memory budget by
// putting them in a temporary file that is mapped into memory.
//
// Most of what an analysis holds is a few big arrays of fixed-size records
// without pointers (the GPU ops: 48 bytes each, hundreds of MB on a long
// capture; docs/design.md §3). Slice gives such an array from a file in the
// spill directory, deleted as soon as it is created, mapped shared: reading
// and writing it are reading and writing memory, and the table's pages are
// a file's: the kernel may write them out and reclaim them, mapped or not,
// where the heap's pages (without swap) must stay. A governor watches the
// process's resident memory; when it passes the budget it takes the mapped
// pages out of the process (madvise MADV_DONTNEED, which for a shared file
// mapping keeps every byte written: the pages stay in the page cache or go
// to the file; mapping.drop), and the next access maps them in again. That
// frees nothing by itself: it keeps the resident set within the budget as
// far as the tables can, and leaves their pages unmapped in the page cache,
// where reclaim need not unmap them first. So the tables' size need not be
// memory the process must keep — on a 16 GB laptop or under a container's
// limit, if the rest of the data fits and the disk keeps up.
//
// Nothing else changes: the tables are ordinary Go slices, sorted, rewritten
// and read in place, so the output is the same byte for byte with or without
// a budget. What cannot be spilled is the data with pointers (attribute
// arrays and maps, the string table, most of attribution's results and
// the tenant regression's working memory); the budget
// cannot make that smaller, and a budget below it is passed (cmd/llmprof
// says so). Spans, their attributes, events and links hold none
// (ingest.Span, Trace.AttrArena, SpanEvents, SpanLinks), nor do
// attribution's requests and their tables (attribution.Request,
// Result.TokenTimes …) or the tenant regression's (causal.Request), and
// they spill like the GPU ops.
//
// Spilling is off until Enable is called (cmd/llmprof does, for each
// command) and the budget set (Budget); without them Slice is make. On a
// system without shared file mappings, or where the spill directory cannot
// hold them (in memory, copy-on-write, across a network: refusal in
// spill_linux.go), Slice is make and Enable says why.
package spill

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// MinBytes is the size from which Slice puts a table in a file whatever
// the budget; a table of a 32nd of the budget or more goes there too
// (threshold). Below both the mapping's own cost (a file, system calls,
// faults) is not worth the memory.
const MinBytes = 4 << 20

// threshold is the smallest table Slice puts in a file under budget: a
// 32nd of the budget, at most MinBytes.
//
// It was an eighth, and a 64th was tried then and dropped: on a 112 MB run
// (bench/scale.sh's run-60s-n1, budget 112 MB) a 64th put 92 tables in
// files instead of 35 and took the tenant fit's columns of 1-4 MB off the
// heap (peak live heap 49 MB against 61-63, bench/heapprof -spill), but its
// CPU rose by 22% and by 28% under --memory-limit at 0.8 times the input,
// for a peak RSS of 159 MB against 163 MB and of 133 MB against 145 MB: the
// heap and the binary's pages were the whole budget, the governor took the
// tables' pages out at every tick, and a column the fit reads over and over
// was faulted in again each time. Since the governor takes the program's
// own pages out too (program, in spill_linux.go), there is room: under
// --memory-limit at 0.8 times the same run's input (85.5 MiB) a 32nd peaked
// at 86.0-88.8 MiB against 94.0-96.0 MiB for an eighth, at 11.9-12.7 s of
// CPU against 11.7-13.7 s; at the default budget 103-111 MiB against
// 104-120 MiB, 8.5-9.9 s against 10.0-11.2 s (3 interleaved rounds each,
// at nice -15 beside a loaded machine); a 64th 81.6-88.6 MiB under the
// limit, at 12.3-12.9 s. Budgets from 128 MiB are unchanged (MinBytes).
func threshold(budget int64) int64 { return min(MinBytes, max(budget/32, 1)) }

// tick is how often the governor reads the resident memory.
const tick = 2 * time.Millisecond

// The process-wide state: one budget, one directory, the mappings made.
var state struct {
	mu sync.Mutex
	// enabled counts the Enables not yet released: commands run
	// in-process side by side share one state, and the tables are
	// unmapped when the last releases.
	enabled int
	dir     string
	budget  int64
	maps    []mapping
	stop    chan struct{}
	done    chan struct{}
	stats   Stats
}

// Stats say what spilling did in this process since Enable.
type Stats struct {
	// Mapped is the bytes of tables in spill files now, Peak the most
	// at once (Free takes a table's bytes out of Mapped).
	Mapped, Peak int64
	// Drops counts the times the governor took mapped pages out of the
	// process, DroppedBytes the bytes of mappings it advised away.
	Drops        int
	DroppedBytes int64
	// ProgramDrops counts the times it took the program's own pages out
	// (program, programEvery).
	ProgramDrops int
	// BehindDrops counts the times a pass took the pages behind it out
	// (Behind), BehindBytes the bytes.
	BehindDrops int
	BehindBytes int64
}

// Enable turns spilling on, with dir as the spill directory (the system's
// temporary directory when empty), until the returned release is called.
// The last release stops the governor and unmaps every table Slice gave:
// call it only when nothing uses them any more (cmd/llmprof calls it after
// the command's output is written). While spilling is on, a second Enable
// shares it (its dir is not used) and its release only counts. When
// spilling cannot work here (see the package comment) Enable returns an
// error saying why and a release that does nothing; Slice then makes
// ordinary slices.
func Enable(dir string) (release func(), err error) {
	if dir == "" {
		dir = tempDir()
	}
	if err := usable(dir); err != nil {
		return func() {}, err
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	state.enabled++
	if state.enabled == 1 {
		state.dir, state.budget, state.stats = dir, 0, Stats{}
		behindDrops.Store(0)
		behindBytes.Store(0)
	}
	var once sync.Once
	return func() { once.Do(disable) }, nil
}

func disable() {
	state.mu.Lock()
	if state.enabled--; state.enabled > 0 {
		state.mu.Unlock()
		return
	}
	stop, done, maps := state.stop, state.done, state.maps
	state.maps, state.budget, state.stats = nil, 0, Stats{}
	state.stop, state.done = nil, nil
	highMark.Store(0)
	state.mu.Unlock()
	// The governor may be waiting for the lock; it has stopped touching
	// the mappings once done is closed.
	if stop != nil {
		close(stop)
		<-done
	}
	for _, m := range maps {
		m.unmap()
	}
}

// Budget sets the resident memory, in bytes, that the governor keeps the
// process within; 0 or less turns it off (Slice then makes ordinary
// slices). It applies to the tables Slice makes after it.
func Budget(bytes int64) {
	state.mu.Lock()
	defer state.mu.Unlock()
	state.budget = max(bytes, 0)
}

// Active reports whether spilling is on with a budget: Slice may then put
// a table in a file.
func Active() bool { return current() > 0 }

// current returns the budget in effect, 0 when spilling is off.
func current() int64 {
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.enabled == 0 {
		return 0
	}
	return state.budget
}

// Read returns what spilling did since Enable (nothing after release).
func Read() Stats {
	state.mu.Lock()
	defer state.mu.Unlock()
	s := state.stats
	if state.enabled > 0 {
		s.BehindDrops, s.BehindBytes = int(behindDrops.Load()), behindBytes.Load()
	}
	return s
}

// Slice returns a slice of length 0 and capacity n. When spilling is on
// and the table is large (threshold) it lives in a spill file; otherwise it
// is make([]T, 0, n). T must hold no pointers (checked: a mapped table is
// not seen by the garbage collector). Appending past n moves the table to
// the heap, as append always does.
func Slice[T any](n int) []T {
	var zero T
	size := int64(unsafe.Sizeof(zero))
	if n <= 0 || size == 0 {
		return make([]T, 0, max(n, 0))
	}
	if hasPointers(reflect.TypeFor[T]()) {
		panic(fmt.Sprintf("spill.Slice: %v holds pointers", reflect.TypeFor[T]()))
	}
	if int64(n) > int64(math.MaxInt)/size {
		// More than the address space: make panics as it would without
		// a budget (a mapping's length is an int, and its size would
		// wrap: a 32-bit system mapped 4 GiB + 1 MiB as 1 MiB).
		return make([]T, 0, n)
	}
	bytes := size * int64(n)
	state.mu.Lock()
	spilling, dir := state.enabled > 0 && state.budget > 0 && bytes >= threshold(state.budget), state.dir
	state.mu.Unlock()
	if !spilling {
		return make([]T, 0, n)
	}
	// The file is made, reserved and written outside the lock (reserve).
	m, err := mapFile(dir, bytes)
	if err != nil {
		// A full or unwritable spill directory costs memory, not the
		// analysis: the table is made on the heap as without a budget.
		return make([]T, 0, n)
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.enabled == 0 {
		m.unmap() // spilling was turned off meanwhile
		return make([]T, 0, n)
	}
	state.maps = append(state.maps, m)
	state.stats.Mapped += bytes
	state.stats.Peak = max(state.stats.Peak, state.stats.Mapped)
	if state.stop == nil {
		// The governor runs from the first table mapped: a command
		// that maps none reads no resident set 500 times a second.
		state.stop, state.done = make(chan struct{}), make(chan struct{})
		go govern(state.stop, state.done)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(m.mem))), n)[:0]
}

// Make is Slice at its full length: n zero values (a spill file's pages
// read as zeros until written, as make's memory does).
func Make[T any](n int) []T { return Slice[T](n)[:max(n, 0)] }

// Grow returns s with room for c elements in all: s itself when its
// capacity is c or more, else s's elements with that room, and s given
// back, so that nothing may use s, or a slice of its array, afterwards.
// A table in a spill file whole (as Slice gave it) grows where it is: its
// file grows and the mapping with it (mapping.grow), the pages already
// written stay mapped and nothing is copied. Any other moves to a new
// table from Slice of capacity c, and s is given back (Free).
//
// Copying faulted in every page of the new table beside the old one's:
// on the 30 MiB OTLP dump of docs/otlp.md the attribute arena's and the
// spans' copies were 15% of the page faults of an analyze (perf record),
// and for a moment both tables were resident.
func Grow[T any](s []T, c int) []T {
	if cap(s) >= c {
		return s
	}
	if g, ok := growMapped(s, c); ok {
		return g
	}
	grown := append(Slice[T](c), s...)
	Free(s)
	return grown
}

// growMapped grows s to capacity c where it lies, when s's array is a
// spill file's mapping whole and spilling is still on; false otherwise,
// and when the file cannot grow (the table then moves as before).
func growMapped[T any](s []T, c int) ([]T, bool) {
	size := int64(unsafe.Sizeof(*new(T)))
	if cap(s) == 0 || size == 0 || int64(c) > int64(math.MaxInt)/size {
		return nil, false
	}
	// find is the table's mapping in state.maps, -1 for none (or a slice
	// of the table, not the table). Called with state.mu held.
	p := unsafe.Pointer(unsafe.SliceData(s[:1]))
	find := func() int {
		i := mappingOf(p)
		if i < 0 || int64(len(state.maps[i].mem)) != int64(cap(s))*size {
			return -1
		}
		return i
	}
	state.mu.Lock()
	i := -1
	if state.enabled > 0 {
		i = find()
	}
	var m mapping
	if i >= 0 {
		m = state.maps[i]
	}
	state.mu.Unlock()
	// The file grows outside the lock (reserve); only the owner of s
	// grows or frees its mapping, so m is still s's mapping after it.
	if i < 0 || m.reserve(int64(c)*size) != nil {
		return nil, false
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	if state.enabled == 0 {
		return nil, false
	}
	if i = find(); i < 0 {
		return nil, false
	}
	// The mapping moves under the lock: the governor finds its chunks in
	// state.maps under it, so it never advises the range the mapping
	// leaves.
	grown, err := m.remap(int64(c) * size)
	if err != nil {
		return nil, false
	}
	maps := slices.Clone(state.maps)
	maps[i] = grown
	state.maps = maps
	state.stats.Mapped += int64(len(grown.mem) - len(m.mem))
	state.stats.Peak = max(state.stats.Peak, state.stats.Mapped)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(grown.mem))), c)[:len(s)], true
}

// mappingOf is the index in state.maps of the mapping whose first byte is
// at p, -1 for none. Called with state.mu held.
func mappingOf(p unsafe.Pointer) int {
	if i, off := mappingHolding(p); off == 0 {
		return i
	}
	return -1
}

// mappingHolding is the index in state.maps of the mapping that holds the
// byte at p and p's offset in it; -1 for none. Called with state.mu held.
func mappingHolding(p unsafe.Pointer) (int, int) {
	for i, m := range state.maps {
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(m.mem)))
		if len(m.mem) > 0 && uintptr(p) >= lo && uintptr(p)-lo < uintptr(len(m.mem)) {
			return i, int(uintptr(p) - lo)
		}
	}
	return -1, 0
}

// Free unmaps the spill file that holds s, when s is a table Slice put in
// one (its first element is the mapping's first byte), and gives its disk
// blocks back; otherwise it does nothing, and the collector frees s as any
// slice. Nothing may use s, or a slice of its array, afterwards: the
// memory is gone, and reading it is a fault. Free lets a table that is
// replaced (merged into another, or a fit's working copy) leave the disk
// and the governor's round before the command ends.
func Free[T any](s []T) {
	if cap(s) == 0 {
		return
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	i := mappingOf(unsafe.Pointer(unsafe.SliceData(s[:1])))
	if i < 0 {
		return
	}
	// Under the lock: the governor drops pages under it too, so it never
	// advises an address range this unmaps (which the runtime may then map
	// for the heap).
	m := state.maps[i]
	m.unmap()
	state.maps = slices.Delete(slices.Clone(state.maps), i, i+1)
	state.stats.Mapped -= int64(len(m.mem))
}

// hasPointers reports whether values of t hold pointers the collector
// would have to see.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}

// govern keeps the resident memory within the budget until stop closes:
// every tick it reads the resident set and, above the high mark (the budget
// less the room pacing keeps for the next rise), takes the mappings' pages
// out of the process one chunk at a time, in turn, until it is back below
// the low mark (an eighth under the high mark), so that the pages most
// recently used are the last to go.
//
// When the rest of the process is over the budget on its own, no pass gets
// under it, and every tick takes out again the pages the analysis is using:
// rewriting a 256 MiB table so costs 1.7-1.8 times the CPU of rewriting it
// without drops (BenchmarkRewriteSpilledOverBudget against
// BenchmarkRewriteSpilled), reading it about the same. Waiting longer after
// such a pass was tried and dropped: 2 … 64 ticks brought the rewrite to
// 1.3 times but let an analyze of a 283 MB run under a 200 MiB limit peak at
// 420 MB against 304-334 MB, with no CPU saving that two runs of each could
// show, and up to 8 ticks saved nothing on the rewrite (1.73 times).
func govern(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	rss := newResident()
	defer rss.close()
	t := time.NewTicker(tick)
	defer t.Stop()
	var cursor int64 // position over all mappings, in bytes, of the next chunk
	var pace pacing
	prog := programPages()
	var progDropped time.Time
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		state.mu.Lock()
		budget, some := state.budget, len(state.maps) > 0
		state.mu.Unlock()
		if budget <= 0 || !some {
			// No reading this tick (Free may have given back every
			// table): the next rise is measured from the next one's,
			// not from one ticks ago, over which the heap grew.
			pace.last = 0
			highMark.Store(0)
			continue
		}
		cur := rss.read()
		high, low := pace.marks(cur, budget)
		highMark.Store(high)
		if cur <= high {
			continue
		}
		for advised, total := int64(0), int64(1); cur > low && advised < total; {
			// Each chunk is found and dropped under the lock: Free
			// may have unmapped a table since the last.
			state.mu.Lock()
			maps := state.maps
			total = 0
			for _, m := range maps {
				total += int64(len(m.mem))
			}
			if total == 0 {
				state.mu.Unlock()
				break
			}
			at := cursor % total
			m, off := locate(maps, at)
			n := min(int64(chunk), int64(len(m.mem))-off)
			m.drop(off, n)
			state.stats.DroppedBytes += n
			state.mu.Unlock()
			advised += n
			cursor = at + n
			cur = rss.read()
		}
		progDrop := cur > low && time.Since(progDropped) >= programEvery
		if progDrop {
			// Every table's pages have been advised away this tick and
			// the process is still over: the program's are file pages
			// too.
			prog.drop()
			progDropped = time.Now()
			cur = rss.read()
		}
		pace.dropped(cur)
		state.mu.Lock()
		state.stats.Drops++
		if progDrop {
			state.stats.ProgramDrops++
		}
		state.mu.Unlock()
	}
}

// pacing keeps the governor's marks below the budget by as much as the
// resident set has lately grown from one tick to the next. The governor is
// a goroutine, which runs when the scheduler gives it a processor: while
// the analysis and the collector hold both of a 2-core machine's, a tick
// comes 10-20 ms late, and in that time a pass over a table faults its
// pages back in at gigabytes a second (a 222 MB run's resident set passed
// its budget by 65 MB between two ticks, bench/scale.sh). Dropping below
// the budget by that rise leaves room for the next one.
type pacing struct {
	last int64 // the resident set after the last tick, 0 before the first
	rise int64 // the largest rise between ticks lately, decaying
}

// riseDecay is the share of the rise forgotten each tick: a rise is kept at
// half its size about 0.7 s (355 ticks) after it was seen.
const riseDecay = 512

// marks returns, for the resident set cur read at this tick, the mark past
// which the governor drops pages (the budget less the rise: at least an
// eighth of it, and at most a quarter) and the mark it drops them down to
// (an eighth of the budget lower).
//
// The least room is for the rises no tick has seen yet. At a sixteenth, an
// analyze of bench/scale.sh's 112 MB run peaked at 105-111 MiB against its
// 106.9 MiB input (budget); at an eighth, 99-106 MiB, the CPU within the
// runs' spread (docs/design.md, "The program's pages", has the figures).
func (p *pacing) marks(cur, budget int64) (high, low int64) {
	p.rise -= p.rise / riseDecay
	if p.last > 0 && cur-p.last > p.rise {
		p.rise = cur - p.last
	}
	p.last = cur
	high = budget - min(max(p.rise, budget/8), budget/4)
	return high, high - budget/8
}

// dropped notes the resident set after the tick's drops, from which the
// next tick's rise is measured.
func (p *pacing) dropped(cur int64) { p.last = cur }

// programEvery is the least time between two drops of the program's pages
// (program): the code and data the analysis is running are faulted in
// again after each, a folio at a time.
const programEvery = 100 * time.Millisecond

// chunk is how much of a mapping the governor drops at a time.
const chunk = 32 << 20

// locate finds the mapping that holds byte at of all mappings laid end to
// end, and the offset in it.
func locate(maps []mapping, at int64) (mapping, int64) {
	for _, m := range maps {
		if at < int64(len(m.mem)) {
			return m, at
		}
		at -= int64(len(m.mem))
	}
	return maps[len(maps)-1], 0
}
