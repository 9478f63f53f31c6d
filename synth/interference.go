package synth

import (
	"math"
	"slices"
	"time"
)

// Tenant interference (Config.Interference): a kernel of the target's engine
// that runs while kernels of the source's engine run on the same GPU takes
// longer, in proportion to how much of its interval they cover:
//
//	duration = base × (1 + Σ_sources Slowdown × overlap)
//
// overlap being the share of the kernel's own (stretched) interval during
// which the source's engine had a kernel on the GPU. A kernel fully
// overlapped by the source's work takes (1 + Slowdown) times as long; one
// that runs alone is not slowed. This is what co-scheduled kernels do under
// MPS or time slicing: they contend only while both run. The duration is
// the fixed point of the equation (the overlap depends on how long the
// kernel lasts), found by a few iterations. That is StretchOverlap, the form
// the kernel view fits; Interference.Mechanism picks another (below).

// interval is [start, end) in ns.
type interval struct{ start, end int64 }

// kernelUnion is the union of engine e's kernel intervals, sorted.
func (r *Run) kernelUnion(e int) []interval {
	var iv []interval
	for si := range r.Steps {
		st := &r.Steps[si]
		if st.Engine != e {
			continue
		}
		for _, op := range r.Ops[st.FirstOp:st.EndOp] {
			if op.Kind == KernelOp && op.End > op.Start {
				iv = append(iv, interval{op.Start, op.End})
			}
		}
	}
	slices.SortFunc(iv, func(a, b interval) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	out := iv[:0]
	for _, v := range iv {
		if n := len(out); n > 0 && v.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, v.end)
			continue
		}
		out = append(out, v)
	}
	return out
}

// covered is how much of [a, b) the sorted, disjoint intervals cover.
func covered(iv []interval, a, b int64) int64 {
	i, _ := slices.BinarySearchFunc(iv, a, func(v interval, t int64) int {
		switch {
		case v.end <= t:
			return -1
		case v.start > t:
			return 1
		}
		return 0
	})
	var c int64
	for ; i < len(iv) && iv[i].start < b; i++ {
		c += max(0, min(b, iv[i].end)-max(a, iv[i].start))
	}
	return c
}

// A Mechanism is how a source's concurrent work stretches the target's
// kernels. All three stretch a kernel that the source's work covers for its
// whole duration (or, for StretchStep, whose whole step it covers) by
// (1 + Slowdown); they differ in between, and only StretchOverlap is the
// form the kernel view fits (causal/kernel.go), so the others test its
// intervals under a model it does not assume.
type Mechanism int

const (
	// StretchOverlap: duration = base × (1 + Slowdown × overlap), overlap the
	// share of the kernel's own stretched interval the source covers.
	StretchOverlap Mechanism = iota
	// StretchRate is overlap-proportional stretch: the kernel progresses
	// (1 + Slowdown) times slower while the source runs (processor sharing),
	// so the time added is Slowdown/(1 + Slowdown) of the time the source
	// covers: duration = base / (1 − overlap × Slowdown/(1 + Slowdown)),
	// convex in the overlap where StretchOverlap is concave in log terms.
	StretchRate
	// StretchStep is step-coincident stretch: every kernel of the target's
	// step takes (1 + Slowdown × y), y the share of the step's GPU window
	// (from its first launch, as long as its kernels' base durations) the
	// source was busy, whatever the kernel's own overlap. Contention at the
	// scheduler's granularity (a time slice spanning the step) looks so.
	StretchStep
)

// String names the mechanism as the tests and docs do.
func (m Mechanism) String() string {
	switch m {
	case StretchRate:
		return "overlap-proportional"
	case StretchStep:
		return "step-coincident"
	}
	return "overlap"
}

// stretch holds the sources that slow one engine.
type stretch struct {
	srcs []stretchSource
}

type stretchSource struct {
	busy []interval
	coef float64
	mech Mechanism
}

// stretcher returns how engine e's kernels are slowed by the kernels of the
// engines that interfere with it (already simulated: engineOrder puts
// sources first), or nil when none does.
func (r *Run) stretcher(e int, modelIndex map[string]int) *stretch {
	var st stretch
	tenantEngine := map[string]int{}
	for _, t := range r.Config.Tenants {
		tenantEngine[t.Name] = modelIndex[t.Model]
	}
	for _, in := range r.Config.Interference {
		if tenantEngine[in.Target] == e && in.Slowdown > 0 {
			st.srcs = append(st.srcs, stretchSource{r.kernelUnion(tenantEngine[in.Source]), in.Slowdown, in.Mechanism})
		}
	}
	if len(st.srcs) == 0 {
		return nil
	}
	return &st
}

// step is the factor StretchStep sources put on every kernel of a step
// whose GPU window is [start, start+window).
func (st *stretch) step(start, window int64) float64 {
	f := 1.0
	if window <= 0 {
		return f
	}
	for _, s := range st.srcs {
		if s.mech == StretchStep {
			f += s.coef * float64(covered(s.busy, start, start+window)) / float64(window)
		}
	}
	return f
}

// kernel is how long a kernel of base duration starting at start takes,
// stepFactor being its step's (step). The duration is the fixed point of
// the overlap-dependent mechanisms (the overlap depends on how long the
// kernel lasts), found by a few iterations.
func (st *stretch) kernel(start, base int64, stepFactor float64) int64 {
	d := max(1, int64(math.Round(float64(base)*stepFactor)))
	for it := 0; it < 20; it++ {
		f := stepFactor
		for _, s := range st.srcs {
			c := float64(covered(s.busy, start, start+d))
			switch s.mech {
			case StretchOverlap:
				f += s.coef * c / float64(d)
			case StretchRate:
				f += s.coef / (1 + s.coef) * c / float64(base)
			}
		}
		next := max(1, int64(math.Round(float64(base)*f)))
		if next == d {
			break
		}
		d = next
	}
	return d
}

// DemoConfig is the run `llmprof demo` writes: DefaultConfig's three
// tenants plus a fourth, "embed", whose own engine shares GPU 0 with the
// engine serving search and chat and stretches its kernels by 40% while
// they overlap (Interference); batch-eval's engine on GPU 1 is the negative
// control. The tenants analysis should find embed → search and chat's
// shared engine and nothing else.
func DemoConfig(seed int64, d time.Duration) Config {
	c := DefaultConfig(seed, d)
	c.Tenants = append(c.Tenants, Tenant{Name: "embed", Model: "mistral-7b", Rate: 8, InputTokens: 600, OutputTokens: 30})
	c.Models = append(c.Models, Model{Name: "mistral-7b", Device: 0, MaxBatch: 32, KVTokens: 60_000})
	c.Interference = []Interference{{Source: "embed", Target: "search", Slowdown: 0.4}}
	return c
}

// InterferenceCost is the truth of what interference cost one request: the
// time other tenants' concurrent work added to the ops of the engine steps
// that served it (Op.Interference summed over each step's ops), split at its
// first token. Prefill is over the steps up to and including the one that
// emitted the first token, Decode over the later ones (divide by
// len(Tokens) − 1 for the cost per output token). Kernels and copies (memcpy
// and memset, which the simulator stretches alike) are kept apart: the
// kernel view of causal measures kernels only.
//
// It is the direct cost — the request's own steps ran longer — not the
// total effect on its latency: a stretched step also delays the requests
// queued behind it, which this does not count.
type InterferenceCost struct {
	Prefill, Decode         int64
	CopyPrefill, CopyDecode int64
}

// InterferenceCost is request q's InterferenceCost.
func (r *Run) InterferenceCost(q *Request) InterferenceCost {
	var c InterferenceCost
	if len(q.Tokens) == 0 {
		return c
	}
	first := q.FirstToken()
	for _, si := range q.Steps {
		st := &r.Steps[si]
		prefill := st.End <= first
		for _, op := range r.Ops[st.FirstOp:st.EndOp] {
			switch {
			case op.Kind == KernelOp && prefill:
				c.Prefill += op.Interference
			case op.Kind == KernelOp:
				c.Decode += op.Interference
			case prefill:
				c.CopyPrefill += op.Interference
			default:
				c.CopyDecode += op.Interference
			}
		}
	}
	return c
}
