package causal

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/stat"
)

// The kernel view's design: each kernel's row (identity, batch controls,
// log duration) and the within transformation that absorbs the identity
// effects (kernel.go has the model).

// batchUse says which of the step's batch measures the regression controls
// for, and holds the steps a row's measures are read from (kernelRow.step
// indexes steps).
type batchUse struct {
	size, tok, ctx bool
	steps          []KernelStep
}

// measure is row's step's i-th batch measure (0 size, 1 tokens, 2
// context), 0 when the row has no step.
func (u batchUse) measure(row *kernelRow, i int) float64 {
	if row.step < 0 {
		return 0
	}
	s := &u.steps[row.step]
	return [3]float64{s.Size, s.Tokens, s.Context}[i]
}

// identity is a kernel's fixed-effect group: its name, launch shape, and
// which launch of that name in its engine step it is (0 when not linked to
// a step).
type identity struct {
	name  ingest.StrID
	grid  [3]uint32
	block [3]uint16
	nth   int
}

type stepName struct {
	step int32
	name ingest.StrID
}

// kernelRows gathers the target's kernels (sorted by start) with their
// identity and step batch; the batch controls are used when at least 90% of
// the kernels carry them (the others are then left out). The rows are a
// table (spill.Slice) the caller gives back.
func kernelRows(t *ingest.Trace, idx []int32, stepOf []int32, steps []KernelStep, cats *attribution.CategoryCache) ([]kernelRow, int, batchUse) {
	rows := spill.Slice[kernelRow](len(idx))
	groupOf := map[identity]int{}
	nth := map[stepName]int{}
	haveSize, haveTok, haveCtx := 0, 0, 0
	// The target's kernels come in the table's order: the pages of the ops
	// and of their steps passed are dropped behind when the process is over
	// its memory budget (spill.Behind).
	opsBehind, stepsBehind := spill.DropBehind(t.GPUOps), spill.DropBehind(stepOf)
	for _, i := range idx {
		opsBehind.Passed(int(i))
		stepsBehind.Passed(int(i))
		op := &t.GPUOps[i]
		r := kernelRow{op: i, start: op.Start, dur: op.End - op.Start, cat: cats.Of(op), step: stepOf[i]}
		if s := stepOf[i]; s >= 0 {
			if steps[s].Size > 0 {
				haveSize++
			}
			if steps[s].Tokens > 0 {
				haveTok++
			}
			if steps[s].Context > 0 {
				haveCtx++
			}
		}
		sh := t.ShapeOf(op)
		id := identity{name: op.Name, grid: sh.Grid, block: sh.Block}
		if s := stepOf[i]; s >= 0 {
			// The n-th launch of a name in a step is the same layer's op from
			// step to step (one name serves several projections of a layer).
			k := stepName{s, op.Name}
			id.nth = nth[k]
			nth[k]++
		}
		g, ok := groupOf[id]
		if !ok {
			g = len(groupOf)
			groupOf[id] = g
		}
		r.group = int32(g)
		rows = append(rows, r)
	}
	enough := func(n int) bool { return len(rows) > 0 && float64(n) >= controlCoverage*float64(len(rows)) }
	use := batchUse{size: enough(haveSize), tok: enough(haveTok), ctx: enough(haveCtx), steps: steps}
	if use.size || use.tok || use.ctx {
		kept := rows[:0]
		for r := range rows {
			if (!use.size || use.measure(&rows[r], 0) > 0) && (!use.tok || use.measure(&rows[r], 1) > 0) && (!use.ctx || use.measure(&rows[r], 2) > 0) {
				kept = append(kept, rows[r])
			}
		}
		rows = kept
	}
	return rows, len(groupOf), use
}

// withinPlan residualizes columns on each identity's own intercept and
// batch slopes (Frisch–Waugh: the pooled regression of the residuals gives
// the β of the model with those effects). The controls do not change across
// the Gauss–Newton steps of a fit, so each group's members are found once
// (newWithinPlan) and applied to every step's columns. Rows of a group with
// no residual freedom are left out. The columns are laid out group by group
// (order), so that each group's rows are adjacent in memory, and written
// back in row order.
//
// A group's orthonormal basis of its controls depends on nothing but the
// steps its rows ran in, in order, and most groups share theirs with many
// others: every kernel launched once in each decode step has the same steps.
// The plan builds
// each sequence's basis once and holds it (withinSeg.basis) for every step
// of every fit that uses the plan, up to heldBasisLimit floats; a basis not
// held is built again where it is applied, one group at a time, as all of
// them once were: the bases of all groups are up to seven floats a row, as
// large as the rows themselves, beside the fit's columns, the kernel view's
// peak of memory. A basis held is the one built there, digit for digit
// (the same operations on the same logs).
type withinPlan struct {
	use batchUse
	// ctl is each control's log (batch size, tokens, context, those used)
	// per step of use.steps, and ctlStep the step of each of the kept rows
	// in order: what a basis not held is built from (segLogs), read in
	// order, where the rows themselves lie scattered. ctlStep is nil when
	// every basis is held.
	ctl     [][]float64
	ctlStep []int32
	// size is each group's number of rows and rank the dimension of its
	// basis, -1 for a group without rows or without freedom left; segOf is
	// each group's seg, -1 for none.
	size, rank, segOf []int32
	// absorbed is the number of parameters the bases take.
	absorbed int
	// keep says which rows are in a group with freedom left; kept counts
	// them and dropped lists the others (of those the plan selects:
	// newSelectedPlan).
	keep    []bool
	kept    int
	dropped []int32
	// order is the kept rows group by group, segs each group's span of it,
	// and dest each entry's index among the kept rows in row order (int32:
	// a run's rows number in the millions, its fit's memory is the view's
	// peak).
	order, dest []int32
	segs        []withinSeg
	// longest is the most rows a seg has.
	longest int
}

// withinSeg is one group's rows in a withinPlan's order, the group, and its
// basis when the plan holds it (nil: built where it is applied). Groups
// with the same steps share one basis's memory.
type withinSeg struct {
	from, to int
	group    int32
	basis    [][]float64
}

// heldBasisFloor is the floats of bases a plan holds even where its rows
// are fewer (2 MiB): a small target's fits are cheap in memory.
const heldBasisFloor = 1 << 18

// heldBasisLimit is the floats of bases a plan of n rows holds: one a row,
// the size of one of its fit's columns, or heldBasisFloor.
func heldBasisLimit(n int) int { return max(n, heldBasisFloor) }

// newWithinPlan finds the members and bases of rows' groups. A group whose
// rows in rows are all the rows it has in full (same rows, same order) takes
// its dimension and basis from full instead of building it; full may be
// nil.
func newWithinPlan(rows []kernelRow, groups int, use batchUse, full *withinPlan) *withinPlan {
	return newWithinPlanHolding(rows, groups, use, full, heldBasisLimit(len(rows)))
}

// stepSeq is one sequence of steps of newWithinPlan's groups: its first
// group, how many groups have it, and its basis's rank and, when held, the
// basis.
type stepSeq struct {
	group, groups int
	rank          int
	basis         [][]float64
}

// newWithinPlanHolding is newWithinPlan holding at most limit floats of
// bases (those of sequences of steps that several groups share first).
func newWithinPlanHolding(rows []kernelRow, groups int, use batchUse, full *withinPlan, limit int) *withinPlan {
	return newSelectedPlan(rows, nil, groups, use, full, limit)
}

// selectedRows is how many rows sel keeps (nil: all of rows).
func selectedRows(rows []kernelRow, sel []bool) int {
	if sel == nil {
		return len(rows)
	}
	n := 0
	for _, in := range sel {
		if in {
			n++
		}
	}
	return n
}

// newSelectedPlan is newWithinPlanHolding of the rows sel keeps (nil: all)
// without a copy of them: the plan's order, dropped rows and keep index
// rows itself, and a row sel leaves out is neither kept nor dropped. Its
// groups, bases and order are those of the plan of a copy of the rows sel
// keeps (the same rows in the same order), so a fit on it is that fit,
// digit for digit; the per-category fits took such a copy of their rows
// (32 bytes a row) and of their overlaps (8 bytes a row and source), the
// kernel view's peak of live heap.
func newSelectedPlan(rows []kernelRow, sel []bool, groups int, use batchUse, full *withinPlan, limit int) *withinPlan {
	in := func(r int) bool { return sel == nil || sel[r] }
	n := selectedRows(rows, sel)
	p := &withinPlan{use: use, size: make([]int32, groups), rank: make([]int32, groups), segOf: make([]int32, groups),
		keep: spill.Make[bool](len(rows)), order: spill.Slice[int32](n)}
	// Each group's rows in order, as slices of one array (a counting sort).
	count := make([]int, groups+1)
	for r := range rows {
		if in(r) {
			count[rows[r].group+1]++
		}
	}
	for g := 1; g <= groups; g++ {
		count[g] += count[g-1]
	}
	all := spill.Make[int32](n)
	// With controls, each member's step beside it (allSteps), taken in the
	// same pass over the rows in their order: the sequences of steps, the
	// bases' logs and ctlStep read them group by group, where a read of the
	// rows themselves (a spill table 8 times the size) in that order touched
	// each of its pages again and again (docs/tenants.md, "What the kernel
	// view costs").
	var allSteps []int32
	if use.measures() > 0 {
		allSteps = spill.Make[int32](n)
	}
	for r := range rows {
		if !in(r) {
			continue
		}
		g := rows[r].group
		all[count[g]] = int32(r)
		if allSteps != nil {
			allSteps[count[g]] = rows[r].step
		}
		count[g]++
	}
	span := func(g int) (int, int) {
		if g == 0 {
			return 0, count[0]
		}
		return count[g-1], count[g]
	}
	members := func(g int) []int32 {
		from, to := span(g)
		return all[from:to]
	}
	memberSteps := func(g int) []int32 {
		from, to := span(g)
		return allSteps[from:to]
	}
	if m := use.measures(); m > 0 {
		p.ctl = make([][]float64, m)
		for c := range p.ctl {
			p.ctl[c] = make([]float64, len(use.steps))
		}
		for s := range use.steps {
			r := kernelRow{step: int32(s)}
			for c := range p.ctl {
				p.ctl[c][s] = controlLog(&r, use, c)
			}
		}
	}
	// Each group's sequence of steps (-1: no rows, -2: taken from full).
	// Without controls a basis is the constant alone, the same for every
	// group of one size.
	seqOf := make([]int32, groups)
	var seqs []stepSeq
	index := map[string]int32{}
	var key []byte
	for g := range seqOf {
		m := members(g)
		p.size[g], p.rank[g], p.segOf[g] = int32(len(m)), -1, -1
		switch {
		case len(m) == 0:
			seqOf[g] = -1
			continue
		case full != nil && int(full.size[g]) == len(m):
			seqOf[g] = -2
			continue
		}
		key = key[:0]
		if p.ctl == nil {
			key = binary.LittleEndian.AppendUint32(key, uint32(len(m)))
		} else {
			for _, st := range memberSteps(g) {
				key = binary.LittleEndian.AppendUint32(key, uint32(st))
			}
		}
		s, ok := index[string(key)]
		if !ok {
			s = int32(len(seqs))
			index[string(key)] = s
			seqs = append(seqs, stepSeq{group: g})
		}
		seqs[s].groups++
		seqOf[g] = s
	}
	index = nil
	// Each sequence's basis, built once: those several groups share are held
	// first, then those of one group, while the limit allows.
	var buf, logs [][]float64
	held := 0
	for _, shared := range []bool{true, false} {
		for s := range seqs {
			q := &seqs[s]
			if (q.groups > 1) != shared {
				continue
			}
			m := members(q.group)
			logs = growColumns(logs, len(p.ctl), len(m))
			for c, lc := range p.ctl {
				for a, st := range memberSteps(q.group) {
					logs[c][a] = lc[st]
				}
			}
			var basis [][]float64
			basis, buf = p.groupBasis(logs, len(m), buf)
			q.rank = len(basis)
			if len(m) > q.rank && held+q.rank*len(m) <= limit {
				q.basis = holdBasis(basis, len(m))
				held += q.rank * len(m)
			}
		}
	}
	for g := range p.rank {
		m := members(g)
		var rank int
		var basis [][]float64
		switch s := seqOf[g]; s {
		case -1:
			continue
		case -2:
			if full.rank[g] < 0 {
				continue // no freedom in full: none here either
			}
			rank, basis = int(full.rank[g]), full.segs[full.segOf[g]].basis
		default:
			rank, basis = seqs[s].rank, seqs[s].basis
			if len(m) <= rank {
				continue // no freedom left: the group says nothing about β
			}
		}
		p.rank[g] = int32(rank)
		p.absorbed += rank
		p.segOf[g] = int32(len(p.segs))
		p.segs = append(p.segs, withinSeg{from: len(p.order), to: len(p.order) + len(m), group: int32(g), basis: basis})
		p.longest = max(p.longest, len(m))
		p.order = append(p.order, m...)
		for _, r := range m {
			p.keep[r] = true
		}
	}
	// The members and their steps go before the destinations come: ctlStep
	// is taken from the steps first, so that the two tables are not held
	// beside pos and dest.
	if p.ctl != nil && slices.ContainsFunc(p.segs, func(s withinSeg) bool { return s.basis == nil }) {
		p.ctlStep = spill.Make[int32](len(p.order))
		for _, s := range p.segs {
			copy(p.ctlStep[s.from:s.to], memberSteps(int(s.group)))
		}
	}
	spill.Free(allSteps)
	spill.Free(all)
	all, allSteps = nil, nil
	pos := spill.Make[int32](len(rows))
	defer spill.Free(pos)
	for r := range rows {
		if p.keep[r] {
			pos[r] = int32(p.kept)
			p.kept++
		} else if in(r) {
			p.dropped = append(p.dropped, int32(r))
		}
	}
	p.dest = spill.Make[int32](len(p.order))
	for i, r := range p.order {
		p.dest[i] = pos[r]
	}
	return p
}

// free gives back the plan's arrays of a value a row (spill.Free): its
// order, destinations, flags and steps. What is left serves as bases.
func (p *withinPlan) free() {
	p.freeFitIndex()
	spill.Free(p.order)
	p.order = nil
}

// freeFitIndex gives back the arrays of a value a row that only fits read
// (spill.Free): the destinations, flags and steps. What is left puts a
// layout back in row order (toRowOrder) and serves as bases.
func (p *withinPlan) freeFitIndex() {
	spill.Free(p.dest)
	spill.Free(p.keep)
	spill.Free(p.ctlStep)
	p.dest, p.keep, p.ctlStep = nil, nil, nil
}

// bases is the plan as the full plan of others (newWithinPlan's full):
// each group's size, rank and basis, without the order, destinations and
// flags of its rows (9 to 13 bytes a row), which a plan built from it does
// not read. The per-category fits, the kernel view's peak of memory once
// the fits of all rows are done, hold this in place of the plan.
func (p *withinPlan) bases() *withinPlan {
	return &withinPlan{use: p.use, size: p.size, rank: p.rank, segOf: p.segOf, segs: p.segs, absorbed: p.absorbed, longest: p.longest}
}

// layout is set's overlaps of rows in the plan's layout (laidOverlaps):
// the kept rows' in the plan's order, then the dropped rows', each a copy
// of its row's overlap (its step's share where set reads one), in tables
// (spill.Slice) the caller gives back (freeColumns).
func (p *withinPlan) layout(rows []kernelRow, set overlapSet) laidOverlaps {
	lay := laidOverlaps{x: make([][]float64, len(set.x))}
	for j := range lay.x {
		x := spill.Slice[float64](len(p.order) + len(p.dropped))
		for _, r := range p.order {
			x = append(x, set.at(rows, j, int(r)))
		}
		for _, r := range p.dropped {
			x = append(x, set.at(rows, j, int(r)))
		}
		lay.x[j] = x
	}
	return lay
}

// layoutSteps is each row's step in the plan's layout (laidOverlaps.stepOf),
// a table (spill.Slice) the caller gives back.
//
// The kept rows' steps are read in the rows' order (keptRows) and gathered
// into the plan's (dest): a read of the rows in the plan's order touched
// each page of theirs (a spill table) again and again.
func (p *withinPlan) layoutSteps(rows []kernelRow) []int32 {
	steps := spill.Make[int32](len(p.order) + len(p.dropped))
	byRow := spill.Make[int32](len(p.order))
	for a, r := range keptRows(p.keep) {
		byRow[a] = rows[r].step
	}
	for i, a := range p.dest {
		steps[i] = byRow[a]
	}
	spill.Free(byRow)
	for q, r := range p.dropped {
		steps[len(p.order)+q] = rows[r].step
	}
	return steps
}

// toRowOrder puts x, in the layout of a plan of all its rows, back in the
// order of those rows, in place: the entry at i belongs at its row's index (p.order[i], or the
// dropped row's), and each cycle of that permutation is followed once,
// moving every value straight to its place (a bit a row marks those
// placed). A copy in row order (8 bytes a row) beside the layout was the
// kernel view's peak of live heap on a 112 MB run (docs/design.md).
func (p *withinPlan) toRowOrder(x []float64) {
	kept := len(p.order)
	dest := func(i int) int {
		if i < kept {
			return int(p.order[i])
		}
		return int(p.dropped[i-kept])
	}
	placed := make([]uint64, (len(x)+63)/64)
	for i := range x {
		if placed[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		// v belongs at d; what was there belongs at dest(d), and so on
		// until the cycle comes back to i.
		v, d := x[i], dest(i)
		for d != i {
			v, x[d] = x[d], v
			placed[d/64] |= 1 << (d % 64)
			d = dest(d)
		}
		x[i] = v
		placed[i/64] |= 1 << (i % 64)
	}
}

// freeColumns gives back each of cols (spill.Free) and forgets it.
func freeColumns(cols [][]float64) {
	for j := range cols {
		spill.Free(cols[j])
		cols[j] = nil
	}
}

// holdBasis is a copy of basis (vectors of m floats) in one array of its
// own, to hold past the memory it was built in.
func holdBasis(basis [][]float64, m int) [][]float64 {
	flat := make([]float64, len(basis)*m)
	out := make([][]float64, len(basis))
	for i, q := range basis {
		out[i] = flat[i*m : (i+1)*m : (i+1)*m]
		copy(out[i], q[:m])
	}
	return out
}

// controlLog is the log of row's c-th batch measure among those use holds
// (size, tokens, context, in that order).
func controlLog(row *kernelRow, use batchUse, c int) float64 {
	for i, on := range [3]bool{use.size, use.tok, use.ctx} {
		if !on {
			continue
		}
		if c == 0 {
			return math.Log(use.measure(row, i))
		}
		c--
	}
	panic("causal: control index out of range")
}

// growColumns is buf holding n columns of l floats each.
func growColumns(buf [][]float64, n, l int) [][]float64 {
	if len(buf) < n {
		buf = append(buf, make([][]float64, n-len(buf))...)
	}
	for c := range buf[:n] {
		buf[c] = stat.Grow(buf[c], l)
	}
	return buf[:n]
}

// measures is the number of batch measures used (a group's controls are
// its constant and a quadratic in each).
func (u batchUse) measures() int {
	n := 0
	for _, on := range []bool{u.size, u.tok, u.ctx} {
		if on {
			n++
		}
	}
	return n
}

// groupBasis is the orthonormal basis of one group's controls, its
// constant and a quadratic in each log batch measure (logs, one column per
// measure used, of its m rows), by modified Gram–Schmidt, twice
// (orthoBasis's operations in its order), built in buf's memory (grown as
// needed, and returned for the next group).
func (p *withinPlan) groupBasis(logs [][]float64, m int, buf [][]float64) (basis, _ [][]float64) {
	buf = growColumns(buf, 1+2*len(logs), m)
	// A quadratic in each log batch measure: kernel time is affine in the
	// work (a fixed cost plus a per-token one), not a power of it. Each
	// column is written where Gram–Schmidt takes it, the next free slot;
	// a log's square, taken with it, waits in the slot after (at most the
	// last one: a slot is used only by a column kept before), and moves
	// down when the log adds no direction.
	v := buf[0]
	for a := range v {
		v[a] = 1
	}
	basis = gramSchmidtStep(basis, v, 1e-8)
	for _, lc := range logs {
		l, sq := buf[len(basis)], buf[len(basis)+1]
		for a := range l {
			l[a] = lc[a]
			sq[a] = l[a] * l[a]
		}
		n := len(basis)
		if basis = gramSchmidtStep(basis, l, 1e-8); len(basis) == n {
			copy(l, sq)
			sq = l
		}
		basis = gramSchmidtStep(basis, sq, 1e-8)
	}
	return basis, buf
}

// segLogs is seg s's columns of the controls' logs (p.ctl by the rows'
// steps), written in into's memory (grown as needed).
func (p *withinPlan) segLogs(s withinSeg, into [][]float64) [][]float64 {
	into = growColumns(into, len(p.ctl), s.to-s.from)
	for c, logs := range p.ctl {
		col := into[c]
		for a, st := range p.ctlStep[s.from:s.to] {
			col[a] = logs[st]
		}
	}
	return into
}

// apply residualizes each of cols (of length kept, in the plan's order) in
// place on the identity effects, and writes it to the matching outs in row
// order.
func (p *withinPlan) apply(cols, outs [][]float64) {
	vs := make([][]float64, len(cols))
	var buf, logs [][]float64
	for _, s := range p.segs {
		for c := range cols {
			vs[c] = cols[c][s.from:s.to]
		}
		basis := s.basis
		if basis == nil {
			logs = p.segLogs(s, logs)
			basis, buf = p.groupBasis(logs, s.to-s.from, buf)
		}
		residualizeGroup(vs, basis)
	}
	for c, out := range outs {
		col := cols[c][:len(p.dest)]
		for i, d := range p.dest {
			out[d] = col[i]
		}
	}
}

// fillDesign is apply of ncol columns that fill writes one group at a time:
// for the a-th row of a group, the i-th of the plan's order, fill sets
// vals[c][a] for each column c, or returns false to stop (fillDesign then
// returns false). Each group's columns are residualized as apply
// residualizes them, multiplied by the group's weight (weight[g], by group;
// nil: none), the first written to y and the others to the row-major design
// of ncol − 1 columns, in row order: the same product, of the same residual
// and weight, as weighting the columns after they are filled, without a
// weight held for every row. Only one group's columns are held at a time,
// not those of every row (and one group's basis, where the plan does not
// hold it).
//
// The design's columns go first to stage (kept·(ncol − 1) floats, nil: made
// here), one column after another in the plan's order, and from there to
// the design a band of its rows at a time (designBand): each group's rows
// lie all over the design, a spill table on a large target, and writing
// them there group by group kept every page of it in use for the whole
// fill, each faulted back in as often as the spill governor took it out in
// the meantime (docs/tenants.md, "What the kernel view costs"). The values
// and products are the same. Where squares is not nil (ncol − 1 floats),
// each design column's sum of squares is summed there as a band is
// written, over its rows in order (stat.Scratch.Squares: the sums the fit
// would take in a pass of its own over the design).
func (p *withinPlan) fillDesign(ncol int, fill func(i, a int, vals [][]float64) bool, weight, y, design, stage, squares []float64) bool {
	buf := make([][]float64, ncol)
	for c := range buf {
		buf[c] = make([]float64, p.longest)
	}
	var bases, logs [][]float64
	vs := make([][]float64, ncol)
	k, n := ncol-1, p.kept
	if stage == nil {
		stage = make([]float64, n*k)
	}
	stage = stage[:n*k]
	for _, s := range p.segs {
		m := s.to - s.from
		for c := range vs {
			vs[c] = buf[c][:m]
		}
		for a := range m {
			if !fill(s.from+a, a, vs) {
				return false
			}
		}
		basis := s.basis
		if basis == nil {
			logs = p.segLogs(s, logs)
			basis, bases = p.groupBasis(logs, m, bases)
		}
		residualizeGroup(vs, basis)
		for c := 1; c < ncol; c++ {
			copy(stage[(c-1)*n+s.from:(c-1)*n+s.to], vs[c])
		}
		if weight == nil {
			for a, d := range p.dest[s.from:s.to] {
				y[d] = vs[0][a]
			}
			continue
		}
		w := weight[s.group]
		for a, d := range p.dest[s.from:s.to] {
			y[d] = vs[0][a] * w
		}
	}
	// Each group's next row to write (an index into the plan's order).
	next := make([]int, len(p.segs))
	for g, s := range p.segs {
		next[g] = s.from
	}
	band := max(1, designBand/(8*max(k, 1)))
	clear(squares)
	for end := band; ; end += band {
		for g, s := range p.segs {
			i := next[g]
			if weight == nil {
				for ; i < s.to && int(p.dest[i]) < end; i++ {
					row := design[int(p.dest[i])*k:][:k]
					for c := range row {
						row[c] = stage[c*n+i]
					}
				}
			} else {
				w := weight[s.group]
				for ; i < s.to && int(p.dest[i]) < end; i++ {
					row := design[int(p.dest[i])*k:][:k]
					for c := range row {
						row[c] = stage[c*n+i] * w
					}
				}
			}
			next[g] = i
		}
		if squares != nil && k > 0 {
			rows := design[(end-band)*k : min(end, n)*k]
			for d := 0; d+k <= len(rows); d += k {
				for c, v := range rows[d : d+k] {
					squares[c] += float64(v * v)
				}
			}
		}
		if end >= n {
			break
		}
	}
	return true
}

// designBand is the bytes of the design fillDesign writes at a time: 64
// pages, so that each is written in one short burst.
const designBand = 256 << 10

// residualizeGroup residualizes each of one group's columns in place on
// its basis. Four columns at a time: their products are independent chains
// of additions the processor overlaps.
func residualizeGroup(vs [][]float64, basis [][]float64) {
	c := 0
	for ; c+4 <= len(vs); c += 4 {
		residualize4(vs[c], vs[c+1], vs[c+2], vs[c+3], basis)
	}
	if c+2 <= len(vs) {
		residualize2(vs[c], vs[c+1], basis)
		c += 2
	}
	if c < len(vs) {
		residualize(vs[c], basis)
	}
}

// residualize subtracts from v its projection on the orthonormal basis,
// twice for stability (modified Gram–Schmidt): for each pass and each q in
// turn, v −= (v·q) q. Each subtraction runs in the loop that forms the next
// product, which changes the passes over memory but not a single operation
// or its order (the digits are those of the two loops written apart).
// Each product is rounded before it is added or subtracted (float64(x*y):
// no fused multiply-add, which GOAMD64=v3 and arm64 builds would otherwise
// form where the compiler chooses), so that residualize2, residualize4,
// dot and the loops written apart agree to the bit on every platform.
func residualize(v []float64, basis [][]float64) {
	n := len(basis)
	if n == 0 {
		return
	}
	d := dot(v, basis[0])
	for s := 0; s < 2*n-1; s++ {
		q, next := basis[s%n][:len(v)], basis[(s+1)%n][:len(v)]
		e := 0.0
		for a := range v {
			v[a] -= float64(d * q[a])
			e += float64(v[a] * next[a])
		}
		d = e
	}
	q := basis[n-1][:len(v)]
	for a := range v {
		v[a] -= float64(d * q[a])
	}
}

// residualize2 is residualize of two vectors of one length at once, each
// with the same operations in the same order as alone.
func residualize2(v0, v1 []float64, basis [][]float64) {
	n := len(basis)
	if n == 0 {
		return
	}
	l := len(v0)
	v1 = v1[:l]
	q := basis[0][:l]
	var d0, d1 float64
	for a := range v0 {
		d0 += float64(v0[a] * q[a])
		d1 += float64(v1[a] * q[a])
	}
	for s := 0; s < 2*n-1; s++ {
		q, next := basis[s%n][:l], basis[(s+1)%n][:l]
		var e0, e1 float64
		for a := range v0 {
			v0[a] -= float64(d0 * q[a])
			e0 += float64(v0[a] * next[a])
			v1[a] -= float64(d1 * q[a])
			e1 += float64(v1[a] * next[a])
		}
		d0, d1 = e0, e1
	}
	q = basis[n-1][:l]
	for a := range v0 {
		v0[a] -= float64(d0 * q[a])
		v1[a] -= float64(d1 * q[a])
	}
}

// residualize4 is residualize of four vectors of one length at once, each
// with the same operations in the same order as alone.
func residualize4(v0, v1, v2, v3 []float64, basis [][]float64) {
	n := len(basis)
	if n == 0 {
		return
	}
	l := len(v0)
	v1, v2, v3 = v1[:l], v2[:l], v3[:l]
	q := basis[0][:l]
	var d0, d1, d2, d3 float64
	for a := range v0 {
		d0 += float64(v0[a] * q[a])
		d1 += float64(v1[a] * q[a])
		d2 += float64(v2[a] * q[a])
		d3 += float64(v3[a] * q[a])
	}
	for s := 0; s < 2*n-1; s++ {
		q, next := basis[s%n][:l], basis[(s+1)%n][:l]
		var e0, e1, e2, e3 float64
		for a := range v0 {
			v0[a] -= float64(d0 * q[a])
			e0 += float64(v0[a] * next[a])
			v1[a] -= float64(d1 * q[a])
			e1 += float64(v1[a] * next[a])
			v2[a] -= float64(d2 * q[a])
			e2 += float64(v2[a] * next[a])
			v3[a] -= float64(d3 * q[a])
			e3 += float64(v3[a] * next[a])
		}
		d0, d1, d2, d3 = e0, e1, e2, e3
	}
	q = basis[n-1][:l]
	for a := range v0 {
		v0[a] -= float64(d0 * q[a])
		v1[a] -= float64(d1 * q[a])
		v2[a] -= float64(d2 * q[a])
		v3[a] -= float64(d3 * q[a])
	}
}

// orthoBasis is an orthonormal basis of the columns' span (modified
// Gram–Schmidt, twice), leaving out columns that add no direction.
func orthoBasis(cols [][]float64, tol float64) [][]float64 {
	basis, _ := gramSchmidt(cols, tol)
	return basis
}
