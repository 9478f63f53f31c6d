package causal

import (
	"fmt"
	"iter"
	"math"
	"slices"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/stat"
)

// The kernel view's fit: the stretch model by Gauss–Newton, its
// block-clustered errors, the per-pair regressions and the specification
// band (kernel.go has the model).

// kernelFit is one pooled within regression.
type kernelFit struct {
	beta, se []float64
	// df is blocks − 1; coefDF each coefficient's degrees of freedom (of
	// the block length its interval was taken from), dfs the same by fit
	// column.
	df          int
	coefDF, dfs []int
	blocks      int
	blockNs     int64
	kind        SEKind
	n           int
	estimable   []bool
	reason      string
	// first is the Gauss–Newton state after its first step, for a fit of
	// another form on the same rows and overlaps (gaussNewton).
	first *firstStep
}

// fitKernels fits the within-transformed log durations on the overlaps of
// rows sel (nil: all) with block-clustered errors. full is the identity
// effects of all rows (newWithinPlan; nil: found here), whose bases the
// groups sel keeps whole reuse. start, when not nil, is the first step of a
// fit of the same rows sel and overlaps xs in another form.
func fitKernels(rows []kernelRow, groups int, use batchUse, xs [][]float64, sel []bool, o KernelOptions, full *withinPlan, form stretchForm, start *firstStep) kernelFit {
	return fitOverlaps(rows, groups, use, overlapSet{x: xs}, sel, o, full, form, start)
}

// overlapSet is the overlaps a fit reads, by source and row: the kernels'
// own (x, in row order), or, where step is set (SpecStep), each source's
// share of each step's window (stepShares, indexed by step), a row without
// a step keeping its own. The steps' shares are a float a step where their
// rows' copies were a float a row and source, held beside x through every
// fit of a target.
type overlapSet struct {
	x, step [][]float64
}

// at is source j's overlap of row r of rows (the rows x is of).
func (s overlapSet) at(rows []kernelRow, j, r int) float64 {
	if s.step != nil && rows[r].step >= 0 {
		return s.step[j][rows[r].step]
	}
	return s.x[j][r]
}

// laidOverlaps are a fit's overlaps in its plan's layout
// (withinPlan.layout): source j's overlap of the i-th of the plan's kept
// rows, in the plan's order, is x[j][i], and of its q-th dropped row
// x[j][kept+q]. The fit reads them in that order as it fills its columns,
// without a copy of its own. With step set (SpecStep), an entry whose row
// has a step (stepOf, in the same layout) reads its step's share instead.
type laidOverlaps struct {
	x, step [][]float64
	stepOf  []int32
}

// at is source j's overlap of layout entry i.
func (l laidOverlaps) at(j, i int) float64 {
	if l.step != nil {
		if s := l.stepOf[i]; s >= 0 {
			return l.step[j][s]
		}
	}
	return l.x[j][i]
}

// varies is varies of source j's overlaps (of the kept and the dropped
// rows: the extremes do not depend on the order they are read in).
func (l laidOverlaps) varies(j int) bool {
	if l.step == nil {
		return varies(l.x[j])
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	x, share := l.x[j], l.step[j]
	for i, st := range l.stepOf {
		v := x[i]
		if st >= 0 {
			v = share[st]
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi-lo > 1e-9
}

// denominator is form's denominator (stretchForm.denominator) of layout
// entry i. Here and there each term is rounded before it is added
// (float64: no fused multiply-add), so that the two agree to the bit
// wherever the compiler would fuse one and not the other.
func (l laidOverlaps) denominator(form stretchForm, stretch []float64, i int) float64 {
	if l.step == nil {
		return form.denominator(stretch, l.x, i)
	}
	den := 1.0
	for j := range l.x {
		den += float64(form.sign() * stretch[j] * l.at(j, i))
	}
	return den
}

// fitOverlaps is fitKernels of the overlaps of set.
// The plan of the rows it selects and their layout are given back
// (spill.Free) when the fit is done; the rows and set are read where they
// are (newSelectedPlan), not copied.
func fitOverlaps(rows []kernelRow, groups int, use batchUse, set overlapSet, sel []bool, o KernelOptions, full *withinPlan, form stretchForm, start *firstStep) kernelFit {
	plan := full
	if sel != nil || plan == nil {
		plan = newSelectedPlan(rows, sel, groups, use, full, heldBasisLimit(selectedRows(rows, sel)))
		defer plan.free()
	}
	lay := plan.layout(rows, set)
	defer freeColumns(lay.x)
	return fitLaid(rows, groups, lay, o, plan, form, start)
}

// fitLaid is fitKernels of rows' overlaps lay, in plan's layout.
func fitLaid(sub []kernelRow, groups int, lay laidOverlaps, o KernelOptions, plan *withinPlan, form stretchForm, start *firstStep) kernelFit {
	f := kernelFit{estimable: make([]bool, len(lay.x))}
	k := len(lay.x)
	f.n = plan.kept
	if f.n < o.MinKernels || f.n-plan.absorbed < 10*k {
		f.reason = fmt.Sprintf("only %d kernels with freedom left after their identity effects (need %d, and 10 per source)", f.n, o.MinKernels)
		return f
	}
	gn, reason := gaussNewton(plan, sub, lay, groups, form, start)
	defer gn.free()
	f.first = gn.first
	if reason != "" {
		f.reason = reason
		return f
	}
	gn.freeSolve()
	ses, reason := f.clusterErrors(gn.fit, sub, plan.keep, o)
	if reason != "" {
		f.reason = reason
		return f
	}
	f.beta, f.se, f.coefDF = make([]float64, k), make([]float64, k), make([]int, k)
	// fitRowMajor may have dropped collinear columns: index the kept ones.
	fitIndex := make([]int, len(gn.kept))
	next := 0
	for c := range gn.kept {
		fitIndex[c] = -1
		if gn.kept[c] {
			fitIndex[c] = next
			next++
		}
	}
	for j := 0; j < k; j++ {
		f.beta[j], f.se[j] = math.NaN(), math.NaN()
		if gn.colOf[j] < 0 || fitIndex[gn.colOf[j]] < 0 {
			continue
		}
		c := fitIndex[gn.colOf[j]]
		f.beta[j], f.se[j], f.estimable[j] = gn.stretch[j], ses[c], true
		f.coefDF[j] = f.dfs[c]
	}
	return f
}

// stretchFit is the converged stretch model: each source's stretch, the
// last step's weighted within fit, which of its columns it kept, and each
// source's column in it (-1: its overlap does not vary).
type stretchFit struct {
	stretch []float64
	fit     *olsFit
	kept    []bool
	colOf   []int
	first   *firstStep
	// sc and yy are the last step's design, scaled copy, right-hand side
	// and response, the memory fit reads (free).
	sc *olsScratch
	yy []float64
}

// free gives back the fit's buffers of a float or more a row (spill.Free):
// nothing may read gn.fit afterwards.
func (gn *stretchFit) free() {
	if gn.sc != nil {
		gn.sc.free()
	}
	spill.Free(gn.yy)
	gn.sc, gn.yy, gn.fit = nil, nil, nil
}

// freeSolve gives back what the last step's solve alone read, once the
// Gauss–Newton steps are done: the response (yy, and the fit's Y, which
// nothing reads after: the clustered errors read the design and the
// residuals) and the design's scaled copy, so that clusterErrors's bins
// and labels (12 bytes a row) take their memory rather than adding to it
// (docs/design.md, "The kernel view on a 112 MB run").
func (gn *stretchFit) freeSolve() {
	spill.Free(gn.yy)
	gn.yy = nil
	if gn.fit != nil {
		gn.fit.Y = nil
	}
	if gn.sc != nil {
		gn.sc.fit.FreeScaled()
	}
}

// firstStep is the state of a Gauss–Newton fit after its first step: the
// stretches and each identity's σ, which the weights are of (a float an
// identity, where the weights are one a row). The first step, from s = 0, is the
// log-linear model in every form (1 ± Σ 0·x is 1, its log 0), so a fit of
// another form on the same rows and overlaps starts from it, with the same
// digits, instead of taking it again.
type firstStep struct {
	stretch, sigma []float64
}

// gaussNewton fits log d = effects + log(1 + Σ s_j x_j) on the rows of
// sub the plan keeps, their overlaps lay: each step is the within regression of the working response
// y − log(1 + Σ s x) on x_j / (1 + Σ s x); the first, from s = 0, is the
// log-linear model (start, when not nil, is its outcome from a fit of the
// same rows and overlaps in another form). formRate is log d = effects − log(1 − Σ c_j x_j), the
// same with 1 − Σ c x for 1 + Σ s x (the derivative's sign is absorbed by
// the working response's: y + log(1 − Σ c x), columns x_j / (1 − Σ c x)).
// A non-empty reason says why there is no fit.
func gaussNewton(plan *withinPlan, sub []kernelRow, lay laidOverlaps, groups int, form stretchForm, start *firstStep) (stretchFit, string) {
	n, k := plan.kept, len(lay.x)
	gn := stretchFit{stretch: make([]float64, k), colOf: make([]int, k)}
	// Each step's columns: the working response and each varying source's,
	// in that order, residualized one identity at a time into row order —
	// the response into yy, the sources' straight into the design the fit
	// reads (row-major, one column per varying source): the fit's columns
	// are the kernel view's peak of memory.
	nx := 0
	for j := range lay.x {
		gn.colOf[j] = -1
		if lay.varies(j) {
			gn.colOf[j] = nx
			nx++
		}
	}
	if nx == 0 {
		return gn, "no source's overlap varies across the target's kernels"
	}
	// The log durations of the kept rows in the plan's order, read in order
	// each step (the rows lie scattered in it), as their overlaps are laid.
	// They are taken from the rows in the rows' order, into the response's
	// memory (free until the first step fills it), and gathered from there
	// into the plan's: the rows are a spill table four times the size, whose
	// pages a read in the plan's order touched again and again, each time
	// faulting back in what the spill governor had taken out (docs/tenants.md,
	// "What the kernel view costs").
	yy := spill.Make[float64](n)
	yp := spill.Make[float64](n)
	defer spill.Free(yp)
	for a, r := range keptRows(plan.keep) {
		yy[a] = sub[r].logDur()
	}
	for i, a := range plan.dest {
		yp[i] = yy[a]
	}
	// Each step's columns of the i-th of the plan's rows, the a-th of its
	// group: its overlaps read straight from the layout, or (SpecStep)
	// through the steps' shares.
	fill := func(i, a int, vals [][]float64) bool {
		den := form.denominator(gn.stretch, lay.x, i)
		if den <= 0 {
			return false
		}
		vals[0][a] = yp[i] - form.sign()*math.Log(den)
		for j, c := range gn.colOf {
			if c >= 0 {
				vals[c+1][a] = lay.x[j][i] / den
			}
		}
		return true
	}
	if lay.step != nil {
		// laidOverlaps.at and denominator written out: this runs for every
		// row at every step of the fit.
		fill = func(i, a int, vals [][]float64) bool {
			st := lay.stepOf[i]
			den := 1.0
			for j := range lay.x {
				x := lay.x[j][i]
				if st >= 0 {
					x = lay.step[j][st]
				}
				den += float64(form.sign() * gn.stretch[j] * x)
			}
			if den <= 0 {
				return false
			}
			vals[0][a] = yp[i] - form.sign()*math.Log(den)
			for j, c := range gn.colOf {
				if c >= 0 {
					x := lay.x[j][i]
					if st >= 0 {
						x = lay.step[j][st]
					}
					vals[c+1][a] = x / den
				}
			}
			return true
		}
	}
	// The response and the steps' designs, in spill tables that the
	// caller gives back (stretchFit.free): only the last step's fit is kept.
	// Each step's fit takes its design's sums of squares from fillDesign,
	// which sums them as it writes the design, and leaves its residuals
	// to setResid: only the first step's (identitySigmas) and the last's
	// (clusterErrors) are read.
	sc := &olsScratch{fit: stat.Scratch{Spilled: true, DeferResid: true}}
	squares := make([]float64, nx)
	gn.sc, gn.yy = sc, yy
	const diverged = "the stretch model diverged (a source's overlap shortens kernels to nothing)"
	var weight []float64
	iter := 0
	if start != nil {
		copy(gn.stretch, start.stretch)
		weight = groupWeights(start.sigma)
		iter = 1
	}
	for ; iter < 30; iter++ {
		// The rows left out still have to keep their duration positive.
		for q := range plan.dropped {
			if lay.denominator(form, gn.stretch, n+q) <= 0 {
				return gn, diverged
			}
		}
		sc.growDesign(n * nx)
		ok := plan.fillDesign(1+nx, fill, weight, yy, sc.design, sc.fit.Staging(n*nx), squares)
		if !ok {
			return gn, diverged
		}
		sc.fit.Squares = squares
		var err error
		gn.fit, gn.kept, err = fitRowMajor(sc.design, nx, yy, sc)
		if err != nil {
			return gn, fmt.Sprintf("kernel regression failed: %v", err)
		}
		if weight == nil {
			// Weighted least squares from here on: each identity's rows by
			// the inverse of its residual standard deviation, so that kernels
			// whose time depends on what the trace cannot see (attention on
			// the context length) count for less than ones the identity and
			// batch pin down. The clustered errors stay valid for any weights.
			setResid(gn.fit)
			sigma := identitySigmas(plan, gn.fit.resid, groups)
			weight = groupWeights(sigma)
			gn.first = &firstStep{sigma: sigma}
		}
		if gn.step() < 1e-7 && iter > 0 {
			break
		}
		if iter == 0 {
			gn.first.stretch = slices.Clone(gn.stretch)
		}
	}
	setResid(gn.fit)
	return gn, ""
}

// setResid gives f its residuals, which a fit with stat.Scratch's
// DeferResid leaves for when they are read (stat.OLS.SetResid).
func setResid(f *olsFit) {
	f.SetResid()
	f.resid = f.Resid
}

// step adds the last fit's coefficients to the stretches and returns the
// largest change.
func (gn *stretchFit) step() float64 {
	step := 0.0
	for j, col := range gn.colOf {
		if col < 0 || !gn.kept[col] {
			continue
		}
		next := 0
		for c := 0; c < col; c++ {
			if gn.kept[c] {
				next++
			}
		}
		gn.stretch[j] += gn.fit.beta[next]
		step = math.Max(step, math.Abs(gn.fit.beta[next]))
	}
	return step
}

// varies reports whether x takes more than one value (beyond 1e-9).
func varies(x []float64) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range x {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi-lo > 1e-9
}

// clusterErrors sets f's time blocks and degrees of freedom for fit (of
// the rows of sub keep keeps) and returns the standard error of each of its
// coefficients, or a reason there are too few blocks.
//
// The blocks are the block length of the score series over the bins in
// which the target ran kernels (its idle time holds no scores, and counting
// it as zeros would hide the dependence of its busy stretches).
func (f *kernelFit) clusterErrors(fit *olsFit, sub []kernelRow, keep []bool, o KernelOptions) ([]float64, string) {
	binOf, nbins := scoreBins(sub, keep, f.n, o.ScoreBin)
	defer spill.Free(binOf)
	// The block is as long as the longer of the scores' dependence and the
	// regressors': a source's activity comes in stretches (its steps, its
	// bursts), and a slow drift of what the controls miss makes every kernel
	// of one stretch err alike, which the scores show only once the drift
	// is large. Clustering at the scale the "treatment" varies at is the
	// design-based advice of Abadie, Athey, Imbens & Wooldridge (2023).
	blockBins := 1.0
	for j := 0; j < fit.k; j++ {
		score := make([]float64, nbins)
		reg := make([]float64, nbins)
		count := make([]float64, nbins)
		for a := range binOf {
			score[binOf[a]] += fit.x.At(a, j) * fit.resid[a]
			reg[binOf[a]] += fit.x.At(a, j)
			count[binOf[a]]++
		}
		for i := range reg {
			reg[i] /= count[i]
		}
		blockBins = math.Max(blockBins, math.Max(blockLength(score), blockLength(reg)))
	}
	b := int(math.Ceil(blockBins))
	f.blockNs = int64(b) * o.ScoreBin
	labels := spill.Make[int](f.n)
	defer spill.Free(labels)
	for a := range binOf {
		labels[a] = int(binOf[a]) / b
	}
	cov, g, ok := fit.clusterJackknifeOrCR1(labels)
	f.kind = SEClusterJackknife
	if !ok {
		f.kind = SEClusterCR1
	}
	f.blocks = g
	if g < o.MinBlocks {
		return nil, fmt.Sprintf("the errors stay correlated for %s: only %d time blocks (need %d)", fmtDuration(f.blockNs), g, o.MinBlocks)
	}
	f.df = g - 1
	ses := se(cov)
	// The block length is itself estimated, and too short a block
	// understates the variance: each coefficient keeps the wider of its
	// intervals with blocks of b and of 2b bins (each with its own degrees
	// of freedom). In the simulator b alone covered the truth in 88% of 50
	// runs at a nominal 95%.
	f.dfs = make([]int, len(ses))
	for c := range f.dfs {
		f.dfs[c] = f.df
	}
	// The labels of blocks of 2b bins, in the same memory.
	labels2 := labels
	for a := range binOf {
		labels2[a] = int(binOf[a]) / (2 * b)
	}
	cov2, g2, ok2 := fit.clusterJackknife(labels2)
	if ok2 && g2 >= 5 {
		ses2 := se(cov2)
		for c := range ses {
			if tCritical(o.Alpha, g2-1)*ses2[c] > tCritical(o.Alpha, f.df)*ses[c] {
				ses[c], f.dfs[c] = ses2[c], g2-1
			}
		}
	}
	return ses, ""
}

// scoreBins numbers the score bins (of width bin from the first kept
// kernel's start) that hold one of the n rows of sub keep keeps, in time
// order, and returns each kept row's bin number and how many there are.
// Rows come by start (the kernel view's always do), so the bins are
// numbered as they come; rows out of order take the general way, a sort of
// the bins. The bin numbers are a table (spill.Slice) the caller gives back.
//
// The first kept row's start is the least where rows come by start, and
// is taken for it in the one pass that numbers the bins; a row that starts
// before it sends the rows the general way too.
func scoreBins(sub []kernelRow, keep []bool, n int, bin int64) ([]int32, int) {
	t0 := int64(math.MaxInt64)
	binOf := spill.Make[int32](n)
	bins := 0
	last := int64(-1)
	for a, r := range keptRows(keep) {
		if a == 0 {
			t0 = sub[r].start
		}
		b := (sub[r].start - t0) / bin
		if sub[r].start < t0 || b < last {
			spill.Free(binOf)
			for _, r := range keptRows(keep) {
				t0 = min(t0, sub[r].start)
			}
			return scoreBinsSorted(sub, keep, n, bin, t0)
		}
		if b != last {
			bins++
			last = b
		}
		binOf[a] = int32(bins - 1)
	}
	return binOf, bins
}

// scoreBinsSorted is scoreBins of rows in any order.
func scoreBinsSorted(sub []kernelRow, keep []bool, n int, bin, t0 int64) ([]int32, int) {
	bins := make([]int64, 0, n)
	for _, r := range keptRows(keep) {
		bins = append(bins, (sub[r].start-t0)/bin)
	}
	sorted := slices.Clone(bins)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	rank := make(map[int64]int, len(sorted))
	for i, v := range sorted {
		rank[v] = i
	}
	binOf := spill.Make[int32](n)
	for a := range binOf {
		binOf[a] = int32(rank[bins[a]])
	}
	return binOf, len(sorted)
}

// keptRows yields, in order, each row keep keeps: its index among them and
// in keep (the fit's rows, read without an index of them held).
func keptRows(keep []bool) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		a := 0
		for r, in := range keep {
			if !in {
				continue
			}
			if !yield(a, r) {
				return
			}
			a++
		}
	}
}

// stretchForm is how a kernel's overlap enters its log duration.
type stretchForm int

const (
	// formOverlap: log(1 + s·x), the model the stretch is reported in.
	formOverlap stretchForm = iota
	// formRate: −log(1 − c·x), s = c/(1 − c): the kernel progresses 1 + s
	// times slower while overlapped (processor sharing), so the time added
	// is proportional to the time overlapped. The two agree at x = 0 and
	// x = 1 and differ in between.
	formRate
)

func (f stretchForm) sign() float64 {
	if f == formRate {
		return -1
	}
	return 1
}

// denominator is 1 + sign·Σ s_j x_j[i]: the factor the stretches s put on
// row i's duration (its inverse under formRate).
func (f stretchForm) denominator(stretch []float64, x [][]float64, i int) float64 {
	den := 1.0
	for j := range x {
		den += float64(f.sign() * stretch[j] * x[j][i])
	}
	return den
}

// minEffectP is the p-value of H0: |β| ≤ δ against |β| > δ: P(t > (|b| −
// δ)/se) with df degrees of freedom, the size-α test at the boundary of the
// null interval (the far tail is negligible there); δ = 0 gives the
// classical two-sided p-value, and |b| ≤ δ gives 1.
func minEffectP(b, se, delta float64, df int) float64 {
	if math.IsNaN(b) || math.IsNaN(se) || se <= 0 || df <= 0 {
		return math.NaN()
	}
	z := (math.Abs(b) - delta) / se
	switch {
	case delta == 0:
		return tTwoSided(z, df)
	case z <= 0:
		return 1
	}
	return tTwoSided(z, df) / 2
}

// identitySigmas is σ_g of each identity, the root mean squared residual
// of its rows plan keeps (the median σ where a group has too few rows or
// no residual at all). resid is by kept row in the rows' order; each
// group's rows are read from the plan's span of it (dest: in the rows'
// order too), so each sum is over its rows in the same order as a pass
// over the rows gives them, without reading the rows (a spill table).
func identitySigmas(plan *withinPlan, resid []float64, groups int) []float64 {
	ss := make([]float64, groups)
	n := make([]int, groups)
	for _, s := range plan.segs {
		g := s.group
		for _, a := range plan.dest[s.from:s.to] {
			ss[g] += resid[a] * resid[a]
			n[g]++
		}
	}
	sigma := make([]float64, groups)
	var all []float64
	for g := range sigma {
		if n[g] >= 5 && ss[g] > 0 {
			sigma[g] = math.Sqrt(ss[g] / float64(n[g]))
			all = append(all, sigma[g])
		}
	}
	med := 1.0
	if len(all) > 0 {
		slices.Sort(all)
		med = all[len(all)/2]
	}
	for g, s := range sigma {
		if s == 0 {
			sigma[g] = med
		}
	}
	return sigma
}

// groupWeights is 1/σ_g for each identity (identitySigmas), the weight of
// each of its rows (withinPlan.fillDesign).
func groupWeights(sigma []float64) []float64 {
	w := make([]float64, len(sigma))
	for g, s := range sigma {
		w[g] = 1 / s
	}
	return w
}

// kernelRegression fits one target's kernels on one GPU against every
// source's overlap at once.
// shares, when the kernels are linked to steps, are each source's share of
// each step's window (stepShares), SpecStep's overlaps.
//
// The fits of all rows (the model's and the band's) read xs in their
// plan's layout, which takes xs's place while they run (xs[j] is nil
// then, the caller's too, given back with spill.Free); xs comes back in
// the rows' order after them, the same values in the layout's tables,
// put back in place (toRowOrder), for the per-category fits and the
// caller, who gives them back. The kernel view's peak of memory is these
// fits: the layout is not held beside xs, nor xs in row order beside it.
func kernelRegression(target busyKey, sources []busyKey, isolated []bool, srcDev []int16, rows []kernelRow, groups int, use batchUse, xs, shares [][]float64, o KernelOptions, byCat bool) []KernelPair {
	pairs := make([]KernelPair, len(sources))
	for j, s := range sources {
		pairs[j] = KernelPair{
			Source: s.tenant, Target: target.tenant, Device: target.device, SourceDevice: srcDev[j],
			Isolated: isolated[j], Verdict: VerdictNotEstimable,
			StretchPct: nan, CILowPct: nan, CIHighPct: nan, ModelCILowPct: nan, ModelCIHighPct: nan, Coef: nan, SE: nan, P: nan, Q: nan,
			MeanOverlap: nan, Kernels: len(rows), Identities: groups,
		}
		if len(rows) > 0 {
			m := 0.0
			for _, v := range xs[j] {
				m += v
			}
			pairs[j].MeanOverlap = Float(m / float64(len(rows)))
		}
	}
	plan := newWithinPlan(rows, groups, use, nil)
	defer func() { plan.free() }()
	lay := plan.layout(rows, overlapSet{x: xs})
	for j := range xs {
		spill.Free(xs[j])
		xs[j] = nil
	}
	f := fitLaid(rows, groups, lay, o, plan, formOverlap, nil)
	for j := range pairs {
		p := &pairs[j]
		p.Kernels, p.Blocks, p.BlockNs = f.n, f.blocks, f.blockNs
		if f.reason != "" {
			p.Reason = f.reason
			continue
		}
		if !f.estimable[j] {
			p.Reason = fmt.Sprintf("%s's overlap with %s's kernels does not vary or moves in lockstep with another source's", p.Source, p.Target)
			continue
		}
		b, s, df := f.beta[j], f.se[j], f.coefDF[j]
		crit := tCritical(o.Alpha, df)
		p.Estimable = true
		p.Coef, p.SE, p.SEKind = Float(b), Float(s), f.kind
		p.PZero = Float(tTwoSided(b/s, df))
		p.P = Float(minEffectP(b, s, o.MinEffectPct/100, df))
		p.StretchPct, p.CILowPct, p.CIHighPct = Float(100*b), Float(100*(b-crit*s)), Float(100*(b+crit*s))
		p.ModelCILowPct, p.ModelCIHighPct = p.CILowPct, p.CIHighPct
	}
	if f.reason == "" {
		specBand(pairs, rows, groups, lay, shares, o, plan, f.first)
	}
	// The layout goes back to the rows' order in its own tables, once the
	// plan's arrays that only the fits read are given back.
	plan.freeFitIndex()
	for j := range xs {
		plan.toRowOrder(lay.x[j])
		xs[j], lay.x[j] = lay.x[j], nil
	}
	if f.reason != "" {
		return pairs
	}
	f.first = nil // a float a row: not held through the per-category fits
	if !byCat {
		return pairs
	}
	bases := plan.bases() // what the per-category fits' plans read of it
	plan.free()
	plan = bases
	present := map[attribution.KernelCategory]int{}
	for _, r := range rows {
		present[r.cat]++
	}
	var catList []attribution.KernelCategory
	for c, n := range present {
		if n >= o.MinKernels && n < len(rows) {
			catList = append(catList, c)
		}
	}
	slices.Sort(catList)
	for _, c := range catList {
		sel := make([]bool, len(rows))
		for r := range rows {
			sel[r] = rows[r].cat == c
		}
		fc := fitKernels(rows, groups, use, xs, sel, o, plan, formOverlap, nil)
		if fc.reason != "" {
			continue
		}
		for j := range pairs {
			if !pairs[j].Estimable || !fc.estimable[j] {
				continue
			}
			b, s := fc.beta[j], fc.se[j]
			crit := tCritical(o.Alpha, fc.coefDF[j])
			pairs[j].ByCategory = append(pairs[j].ByCategory, CategoryStretch{
				Category: c.String(), Kernels: fc.n,
				StretchPct: Float(100 * b), CILowPct: Float(100 * (b - crit*s)), CIHighPct: Float(100 * (b + crit*s)),
				P: Float(tTwoSided(b/s, fc.coefDF[j])),
			})
		}
	}
	return pairs
}

// specBand fits the alternative specifications (SpecRate on the kernels'
// overlaps lay, in plan's layout, SpecStep on their steps' shares when
// there are steps) and widens
// each estimable pair's interval to the band of all of them. The model's
// interval is valid only if the interference works the way the model says;
// in the simulator, where it can work otherwise, the model's point estimate
// stays within a few points of the truth but its interval, which narrows as
// the run grows, misses it (docs/tenants.md). first is the model's fit's
// first step (kernelFit.first), which SpecRate's fit starts from.
func specBand(pairs []KernelPair, rows []kernelRow, groups int, lay laidOverlaps, shares [][]float64, o KernelOptions, plan *withinPlan, first *firstStep) {
	type spec struct {
		name  string
		form  stretchForm
		start *firstStep
	}
	specs := []spec{{SpecRate, formRate, first}}
	if shares != nil {
		specs = append(specs, spec{SpecStep, formOverlap, nil})
	}
	for _, sp := range specs {
		l := lay
		if sp.name == SpecStep {
			// Each row's step in the layout, 4 bytes a row, for this fit only.
			l = laidOverlaps{x: lay.x, step: shares, stepOf: plan.layoutSteps(rows)}
		}
		f := fitLaid(rows, groups, l, o, plan, sp.form, sp.start)
		spill.Free(l.stepOf)
		if f.reason != "" {
			continue
		}
		for j := range pairs {
			p := &pairs[j]
			if !p.Estimable || !f.estimable[j] {
				continue
			}
			b, se := f.beta[j], f.se[j]
			crit := tCritical(o.Alpha, f.coefDF[j])
			lo, hi := b-crit*se, b+crit*se
			if sp.form == formRate {
				// s = c/(1 − c) is increasing in c below 1; at or past 1 a
				// fully overlapped kernel would never finish: no band.
				if hi >= 1 {
					continue
				}
				b, lo, hi = b/(1-b), lo/(1-lo), hi/(1-hi)
			}
			p.Sensitivity = append(p.Sensitivity, SpecStretch{Spec: sp.name, StretchPct: Float(100 * b), CILowPct: Float(100 * lo), CIHighPct: Float(100 * hi)})
			p.CILowPct = Float(math.Min(float64(p.CILowPct), 100*lo))
			p.CIHighPct = Float(math.Max(float64(p.CIHighPct), 100*hi))
		}
	}
}

// blockLength is the Politis & White (2004) automatic block length for the
// circular block bootstrap, with the correction of Patton, Politis & White
// (2009): b = (2 Ĝ² / D̂)^{1/3} n^{1/3}, D̂ = (4/3) ĝ(0)², from the flat-top
// lag window over 2m̂ lags, m̂ the first lag after which K_N = max(5,
// √log10 n) autocorrelations in a row are insignificant (|ρ| < 2√(log10 n /
// n)). It is at least 1 and at most min(3√n, n/3).
func blockLength(x []float64) float64 {
	n := len(x)
	if n < 8 {
		return 1
	}
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	c := make([]float64, n)
	for i, v := range x {
		c[i] = v - mean
	}
	kn := int(math.Max(5, math.Ceil(math.Sqrt(math.Log10(float64(n))))))
	bmax := math.Ceil(math.Min(3*math.Sqrt(float64(n)), float64(n)/3))
	maxLag := min(n-1, int(bmax)+kn)
	acov := make([]float64, maxLag+1)
	for k := 0; k <= maxLag; k++ {
		s := 0.0
		for i := k; i < n; i++ {
			s += c[i] * c[i-k]
		}
		acov[k] = s / float64(n)
	}
	if acov[0] <= 0 {
		return 1
	}
	thresh := 2 * math.Sqrt(math.Log10(float64(n))/float64(n))
	mhat := -1
	for m := 0; m+kn <= maxLag; m++ {
		ok := true
		for k := 1; k <= kn; k++ {
			if math.Abs(acov[m+k]/acov[0]) >= thresh {
				ok = false
				break
			}
		}
		if ok {
			mhat = m
			break
		}
	}
	if mhat < 0 {
		mhat = maxLag - kn
	}
	M := min(2*mhat, maxLag)
	lambda := func(t float64) float64 {
		t = math.Abs(t)
		switch {
		case t <= 0.5:
			return 1
		case t <= 1:
			return 2 * (1 - t)
		}
		return 0
	}
	g, g0 := 0.0, acov[0]
	for k := 1; k <= M; k++ {
		w := lambda(float64(k) / float64(M))
		g += 2 * w * float64(k) * acov[k]
		g0 += 2 * w * acov[k]
	}
	d := 4.0 / 3 * g0 * g0
	if d <= 0 || M == 0 {
		return 1
	}
	b := math.Cbrt(2*g*g/d) * math.Cbrt(float64(n))
	return math.Min(math.Max(1, b), bmax)
}
