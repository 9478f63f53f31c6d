package driver

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"time"

	"github.com/llmprof/llmprof/internal/progress"
	"github.com/llmprof/llmprof/internal/spill"
)

// The collector's pacing while the pipeline runs.
//
// Go lets the heap grow to (1 + GOGC/100)× what was live after the last
// collection, and at the default of 100 analyze's peak RSS was twice its
// live heap. Most of what is live is pointer-free arrays — the GPU ops, the
// kernel rows, the fits' columns — that a collection does not scan, so
// collecting more often costs little CPU on a large run (docs/design.md,
// "The collector's target", has the figures).
//
// On a small run the same target costs a great deal: the heap starts at a
// few MB, so the collector runs a dozen times while the input is decoded,
// each time stopping every thread (on a 2-core VM the preemption signals and
// the page faults of re-scanned fresh arrays were a third of a 30 MB OTLP
// analyze) to free almost nothing. So the target has a floor: the heap may
// grow to gcFloorBase plus the size of the input before the first
// collection, and never needs to be collected below it. A run whose live data
// is larger than the floor — every run the memory goal is about — is paced by
// the percentage alone, and its peak is what it was.
var (
	// runGCPercent holds from decoding to the report.
	runGCPercent = 50
	// tenantGCPercent holds while the tenant regression runs: its kernel
	// view's fits allocate and drop arrays of tens of bytes a kernel on top
	// of the model.
	tenantGCPercent = 10
)

// gcFloorBase is the heap below which the pipeline never collects, before
// the input's own size is added (gcHold.floor).
const gcFloorBase = 64 << 20

// heapMinimum is the Go runtime's minimum heap goal at GOGC=100
// (runtime/mgcpacer.go, defaultHeapMinimum): its goal is never below it,
// scaled by GOGC/100, before the first collection or after one.
const heapMinimum = 4 << 20

// A gcHold is one holder's ask: a target percentage, and a floor in bytes
// the heap may reach before it is collected.
type gcHold struct {
	percent int
	bytes   int64
	once    sync.Once
}

// gcPacer holds the asks not yet released, and the target before the first.
type gcPacer struct {
	mu    sync.Mutex
	holds []*gcHold
	saved int
	// mapped is what spill files held when the first hold began: an
	// earlier run's tables (diff's candidate), outside this run's floor.
	mapped int64
	// epoch counts the times the pacer started, so that a watcher left
	// from an earlier hold stops rather than retargets.
	epoch int
	// ceil is the heap's ceiling the last run set (gcHold.ceiling; 0:
	// none). It outlives the holds while spilling is on (lingering): the
	// command writes its output from tables in spill files after the
	// pipeline has released its holds, and the heap must leave their
	// pages room then too.
	ceil      int64
	lingering bool
	// least is the least percentage the ceiling sets for the next
	// collection: ceilingPercent, or more after a collection that freed
	// little of what had been allocated since the one before
	// (futilePercent). goal and live are the heap's goal and the live
	// heap at the last retarget, by which the watcher judges the
	// collection that comes at that goal (collected).
	least      int
	goal, live int64
}

var pacer gcPacer

// tightGC paces the collector at percent (or lower where another holder
// asked for less) with a floor of gcFloorBase (or higher where a holder
// set one: floor), until release is called, unless the GOGC environment
// variable is set (the user's choice stands). When the last holder releases,
// the target is what it was before the first — held under the ceiling a
// run set while spilling stays on (gcPacer.ceil). The soft memory limit
// (--memory-limit, GOMEMLIMIT) is another lever and is left alone: the
// runtime collects at whichever of the two comes first.
func tightGC(percent int) *gcHold {
	h := &gcHold{percent: percent, bytes: gcFloorBase}
	if os.Getenv("GOGC") != "" {
		h.once.Do(func() {}) // nothing to release
		return h
	}
	p := &pacer
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.holds) == 0 {
		if p.lingering && !spill.Active() {
			// Spilling ended before the watcher, which looks every
			// watchEvery, saw it: the ceiling ends with it, not
			// with this run (which sets its own, if it spills).
			p.stop()
		}
		if !p.lingering {
			p.saved = debug.SetGCPercent(percent)
		}
		p.lingering = false
		p.least, p.goal = ceilingPercent, 0
		p.mapped = spill.Read().Mapped
		p.epoch++
		p.watch(p.epoch)
	}
	p.holds = append(p.holds, h)
	p.retarget()
	return h
}

// floor lets the heap grow to gcFloorBase + input bytes before it is
// collected.
func (h *gcHold) floor(input int64) {
	p := &pacer
	p.mu.Lock()
	defer p.mu.Unlock()
	h.bytes = gcFloorBase + max(input, 0)
	if slices.Contains(p.holds, h) {
		p.retarget()
	}
}

// ceiling keeps the heap within bytes while it can (ceiledPercent), until
// another run sets its own or, after the last hold is released, until
// spilling ends (gcPacer.ceil); 0 or less: no ceiling.
func (h *gcHold) ceiling(bytes int64) {
	p := &pacer
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.holds, h) {
		p.ceil = max(bytes, 0)
		p.retarget()
	}
}

// budget sets what a run of input bytes keeps within: the heap's floor
// (floor), the spill budget (spillBudget) and, while spilling, the heap's
// ceiling under it (spillCeiling).
func (h *gcHold) budget(input int64) {
	h.floor(input)
	b := spillBudget(input)
	spill.Budget(b)
	if spill.Active() {
		h.ceiling(spillCeiling(b))
	}
}

// release ends the hold; a second call does nothing.
func (h *gcHold) release() {
	h.once.Do(func() {
		p := &pacer
		p.mu.Lock()
		defer p.mu.Unlock()
		p.holds = slices.DeleteFunc(p.holds, func(o *gcHold) bool { return o == h })
		if len(p.holds) == 0 && (p.ceil == 0 || !spill.Active()) {
			p.stop()
			return
		}
		p.lingering = len(p.holds) == 0
		p.retarget()
	})
}

// stop restores the target before the first hold and forgets the
// ceiling. Called with p.mu held.
func (p *gcPacer) stop() {
	debug.SetGCPercent(p.saved)
	p.ceil, p.lingering = 0, false
	p.least, p.goal = ceilingPercent, 0
}

// retarget sets the collector's percentage so that the next collection
// comes at the larger of the lowest percentage asked for and floor, but
// not past the ceiling; lingering, at the target before the first hold,
// not past the ceiling. Called with p.mu held.
func (p *gcPacer) retarget() {
	live, roots := heapState()
	overhead := runtimeOverhead()
	least := leastPercent(p.least, p.ceil, overhead, spill.Read().Mapped, live, roots)
	defer p.noteGoal(live)
	if len(p.holds) == 0 {
		debug.SetGCPercent(ceiledPercent(p.saved, p.ceil, overhead, live, roots, least))
		return
	}
	percent := p.holds[0].percent
	for _, h := range p.holds[1:] {
		percent = min(percent, h.percent)
	}
	floor := p.floor()
	if p.ceil > 0 {
		floor = min(floor, max(p.ceil-overhead, p.ceil/2))
	}
	debug.SetGCPercent(ceiledPercent(pacedPercent(percent, floor, live, roots), p.ceil, overhead, live, roots, least))
}

// runtimeOverhead is the memory the Go runtime holds and has not given
// back to the system, less the heap's objects (runtime/metrics'
// /memory/classes): free pages the scavenger has not given back yet, the
// unused ends of spans, the collector's metadata.
func runtimeOverhead() int64 {
	v := readMetrics([3]string{"/memory/classes/total:bytes", "/memory/classes/heap/released:bytes", "/memory/classes/heap/objects:bytes"})
	return v[0] - v[1] - v[2]
}

// readMetrics reads three runtime/metrics counters (0 for one this Go
// does not have).
func readMetrics(names [3]string) [3]int64 {
	var s [3]metrics.Sample
	for i, name := range names {
		s[i].Name = name
	}
	metrics.Read(s[:])
	var v [3]int64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = int64(s[i].Value.Uint64())
		}
	}
	return v
}

// floor is the highest floor asked for less the tables put in spill files
// since the first hold (spill.Stats.Mapped): the floor is the room the
// run's data may take, and the spilled tables take theirs outside the heap
// (docs/design.md, "Spilling"). An earlier run's spilled tables, which diff
// holds while it reads its baseline, were never in this run's room, and
// taking them off too left the baseline a floor smaller by all of them.
// Called with p.mu held.
func (p *gcPacer) floor() int64 {
	floor := p.holds[0].bytes
	for _, h := range p.holds[1:] {
		floor = max(floor, h.bytes)
	}
	// Tables freed since the first hold (spill.Free) that were mapped
	// before it give back no room of this run's.
	return max(floor-max(spill.Read().Mapped-p.mapped, 0), 0)
}

// pacedPercent is the percentage at which the collector next collects at
// the larger of live × (1 + percent/100) and floor, live being the heap the
// last collection marked (0 before the first) and roots the stacks and
// globals it scanned. The runtime's goal at percentage p is the larger of
// live + (live + roots) × p/100 and its minimum heap, heapMinimum × p/100
// (runtime/mgcpacer.go): both must reach the floor and neither pass it.
// Solving for the first alone let a run whose first collection came at
// start-up, with a live heap well under heapMinimum, set a percentage whose
// minimum heap was many times the floor (a 224 MB run peaked at 1.35 GB,
// against 0.50 GB).
func pacedPercent(percent int, floor, live, roots int64) int {
	need := float64(floor) * 100 / heapMinimum
	if base := live + roots; base > 0 {
		need = min(need, float64(floor-live)*100/float64(base))
	}
	if need <= float64(percent) {
		return percent
	}
	return int(min(need, 1<<30))
}

// ceiledPercent is percent, lowered where the heap's goal at it,
// live + (live + roots) × percent/100, would pass ceiling (0: none) less
// the overhead the runtime holds besides the heap's objects
// (runtimeOverhead), but not below least (ceilingPercent, or more after a
// collection that freed little: futilePercent, leastPercent): a live heap
// at the ceiling grows by that share between collections rather than have
// the collector run without end. A percent already below it (or
// negative, the collector off) stands: a ceiling never raises the target.
// The ceiling is the heap's share of a spill budget (spillCeiling), which
// the governor can hold only by taking the tables' pages out.
//
// The overhead is resident like the objects: on the 112 MB bench/scale.sh
// run it was 15 MB at the peak beside 60 MB of objects (free pages the
// scavenger had not given back, about a tenth of the goal, the unused ends
// of spans, metadata). With the goal held to the whole ceiling the process
// passed its budget by it, and the governor took the spilled tables' pages
// out 2,892 times a run to make up for it (`go run ./bench/heapprof
// -spill`); with the overhead taken off, 1,237 times, peak RSS 113-125 MB
// against 132-135 MB and CPU 7.9-8.4 s against 9.3-9.7 s in three
// alternated runs. Past the ceiling is judged against the whole ceiling.
//
// A live heap past the ceiling has passed the budget whatever the
// collector does: each collection then marks all of it to keep the
// overshoot to a tenth of it. So the least percentage grows with the
// overshoot, by a point for each hundredth of the ceiling the live heap is
// past it, up to percent (overshootPercent). Held at a tenth, a 30 MiB OTLP
// dump, whose 60-70 MB of spans cannot spill, collected 12-14 times against
// a 22 MB ceiling and cost 0.379 s of CPU against 0.267 s without the
// ceiling, for a peak of 120-125 MB against 131-142 MB (docs/otlp.md,
// "Sixth pass").
func ceiledPercent(percent int, ceiling, overhead, live, roots int64, least int) int {
	base := live + roots
	if ceiling <= 0 || base <= 0 {
		return percent
	}
	room := float64(ceiling-max(overhead, 0)-live) * 100 / float64(base)
	if room >= float64(percent) {
		return percent
	}
	return max(int(room), min(max(overshootPercent(ceiling, live), least), percent))
}

// overshootPercent is the least percentage a ceiling sets for a live heap:
// ceilingPercent up to the ceiling, and a point more for each hundredth of
// the ceiling past it.
func overshootPercent(ceiling, live int64) int {
	if live <= ceiling {
		return ceilingPercent
	}
	return int(min(ceilingPercent+float64(live-ceiling)*100/float64(ceiling), 1<<30))
}

// ceilingPercent is the least percentage a ceiling sets.
const ceilingPercent = 10

// heapState is the heap the last collection marked live (0 before the
// first) and the stacks and globals it scanned, the pacer's inputs.
func heapState() (live, roots int64) {
	v := readMetrics([3]string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"})
	return v[0], v[1] + v[2]
}

// gcCycles is the number of collections the runtime has completed.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// watchEvery is how often the watcher looks for a finished collection.
const watchEvery = 2 * time.Millisecond

// watch retargets after every collection, and when a table is spilled,
// while epoch's holds last or their ceiling lingers (until spilling ends,
// when it restores the target before the first hold): the floor is a
// number of bytes, and the percentage that reaches it shrinks as the live
// heap grows. It polls the runtime's count of collections, and
// is late by at most watchEvery, in which the heap grows by what is
// allocated in that time. (A garbage sentinel's cleanup would also say when
// a collection ended, but only once the sentinel's span is swept, which the
// background sweeper leaves until it is idle: a bound no one can state.)
func (p *gcPacer) watch(epoch int) {
	go func() {
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		seen, mapped := gcCycles(), spill.Read().Mapped
		for range tick.C {
			p.mu.Lock()
			if p.epoch != epoch || (len(p.holds) == 0 && !p.lingering) {
				p.mu.Unlock()
				return
			}
			if p.lingering && !spill.Active() {
				p.stop()
				p.mu.Unlock()
				return
			}
			n, m := gcCycles(), spill.Read().Mapped
			if n != seen || m != mapped {
				if n != seen {
					p.collected(n - seen)
				}
				seen, mapped = n, m
				p.retarget()
			}
			p.mu.Unlock()
		}
	}()
}

// spillCeiling is the heap's share of a spill budget (spillBudget): the
// budget less the resident memory the Go runtime does not hold (the
// binary's and the C library's pages, an earlier run's spilled tables)
// and less an eighth, which the governor leaves for the pages of the
// spilled tables the analysis is reading. Without it the collector let the
// heap grow to 1.5× its live bytes (runGCPercent), which could pass the
// budget on its own, where no drop of the tables' pages could help
// (docs/design.md, "The heap's share of the budget", has the figures).
// 0 when there is no budget.
func spillCeiling(budget int64) int64 {
	if budget <= 0 {
		return 0
	}
	return max(budget-outsideRuntime()-budget/8, 1)
}

// outsideRuntime is the resident memory the Go runtime does not hold: the
// file-backed and shared pages (progress.FileResident), the binary's, the
// C library's and any spill file's. (The runtime's own count of its mapped
// memory is no measure of the rest: it includes heap it has never touched.)
func outsideRuntime() int64 { return int64(progress.FileResident()) }

// spillBudget is the resident memory a run of input bytes keeps within
// (internal/spill): the input's size (at least gcFloorBase above the
// resident memory outside the runtime, the binary's pages), above the
// heap already live when the run opens its inputs, or the memory limit in
// effect (--memory-limit, GOMEMLIMIT or the default share of the RAM) when
// that is lower; none when the limit is off. Past it the largest tables
// live in a spill file (docs/design.md, "Spilling"). The live heap is an
// earlier run's that the command still holds: diff's candidate while its
// baseline is read. Without it the baseline's budget was below what the
// process held before it read a byte, and the governor took the tables'
// pages out again and again. And a budget of gcFloorBase in all, the
// least before, left the heap of a small run a ceiling of 22 MB once the
// binary's 36 MB of pages and the governor's eighth were taken off
// (spillCeiling): the collector ran 4-6 times while a 30 MiB OTLP dump was
// decoded, to free nothing, and the governor took the spilled spans' pages
// out again and again (408 drops a run), since the process was over that
// budget before it read a byte. Inputs from about 100 MB, the sizes the
// memory goal is about, get the same budget as before.
func spillBudget(input int64) int64 {
	lim := debug.SetMemoryLimit(-1)
	if lim == math.MaxInt64 {
		return 0
	}
	live, _ := heapState()
	return min(lim, max(input, gcFloorBase+outsideRuntime())+live)
}

// noteGoal keeps the heap's goal the runtime has now and the live heap it
// was set from, by which the watcher judges the collection that comes at
// it (collected). Called with p.mu held.
func (p *gcPacer) noteGoal(live int64) {
	p.goal, p.live = readMetrics([3]string{"/gc/heap/goal:bytes"})[0], live
}

// collected judges the collections the watcher has just seen, n of them
// since it last looked: one that freed little raises the least percentage
// the ceiling sets for the next (futilePercent). Of several it cannot say
// which goal each came at. A collection the runtime started at the goal
// before the last retarget, which comes when the heap passes a low goal
// again within watchEvery, is judged by the later goal, which it never
// reached: it seems to have freed more than it did, and the least
// percentage stays ceilingPercent, the target before the rule (seen on the
// 100 MiB OTLP dump: "50->51->51 MB, 70 MB goal"). Called with p.mu held.
func (p *gcPacer) collected(n uint64) {
	live, _ := heapState()
	if n != 1 || p.goal <= 0 {
		p.least = ceilingPercent
		return
	}
	p.least = futilePercent(p.live, p.goal, live)
}

// leastPercent is the least percentage least (after a futile collection,
// futilePercent) the ceiling sets for a live heap, lowered where its goal
// would pass the ceiling, less the runtime's overhead, by more than the
// bytes of tables in spill files (spill.Stats.Mapped): the governor makes
// the heap's room past the ceiling by taking their pages out, and without
// them there is none to make. (The bound is the most there can be: where
// the governor has already taken them out, the heap's room past the
// ceiling is resident memory past the budget, which futileMaxPercent
// bounds. So where tables are sized for the most they may hold and never
// filled — causal's kept table, attribution's token sums — their untouched
// pages count as room, though taking them out frees nothing.) Never below
// ceilingPercent.
func leastPercent(least int, ceiling, overhead, mapped, live, roots int64) int {
	base := live + roots
	if least <= ceilingPercent || ceiling <= 0 || base <= 0 {
		return ceilingPercent
	}
	room := float64(ceiling-max(overhead, 0)+max(mapped, 0)-live) * 100 / float64(base)
	return max(ceilingPercent, min(least, int(max(room, 0))))
}

// futilePercent is the least percentage a ceiling sets for the collection
// after one that came at goal, the one before it having left prevLive
// live, and left live itself. A collection marks the whole live heap; at
// the ceiling it comes when the heap has grown by ceilingPercent of it, and
// while what the program allocates is garbage it frees about that much.
// While the live heap grows with what the program keeps (a 100 MiB OTLP
// dump's attribution and report, 40 MB to 62 MB), it frees little: it
// marked 45-60 MB to free 0-4 MB, 20 times a run. So when the last freed
// less than half of what had been allocated since the one before
// (goal − prevLive), the next comes later by as much as that share was
// small: room × ceilingPercent / freed, at which it is expected to free as
// much again as a collection at ceilingPercent whose allocations were all
// garbage, up to futileMaxPercent. What it leaves on the heap above the
// ceiling's goal is mostly what the program keeps, which the heap would
// hold either way; the garbage, by that share, a few MB.
func futilePercent(prevLive, goal, live int64) int {
	room, freed := goal-prevLive, goal-live
	if room <= 0 || 2*freed >= room {
		return ceilingPercent
	}
	if freed*futileMaxPercent <= room*ceilingPercent {
		return futileMaxPercent
	}
	return int(ceilingPercent * room / freed)
}

// futileMaxPercent is the most futilePercent raises the least percentage
// to. The garbage a raised goal leaves is bounded by the share the last
// collection freed, but a release of a stage's data (the pipeline's end:
// 23 MB of the 100 MiB OTLP dump's heap) is not foreseen by it and stays on
// the heap until the next collection, and at that size the process is at
// its budget with the spilled tables' pages already taken out, so the heap
// has no room past the ceiling that the governor can make: each MB left is
// an MB of resident memory. Measured there (11 alternated runs each, load
// 7-8, docs/design.md "The heap's share of the budget"): up to the
// pipeline's 50%, CPU -7% and peak RSS +10 MB (median); up to 25%, CPU
// -3 to -5% and peak RSS within the runs' noise.
const futileMaxPercent = 25
