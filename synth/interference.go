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
// kernel lasts), found by a few iterations.

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

// stretcher returns how long engine e's kernels take given the kernels of
// the engines that interfere with it (already simulated: engineOrder puts
// sources first), or nil when none does.
func (r *Run) stretcher(e int, modelIndex map[string]int) func(start, base int64) int64 {
	type source struct {
		busy []interval
		coef float64
	}
	var srcs []source
	tenantEngine := map[string]int{}
	for _, t := range r.Config.Tenants {
		tenantEngine[t.Name] = modelIndex[t.Model]
	}
	for _, in := range r.Config.Interference {
		if tenantEngine[in.Target] == e && in.Slowdown > 0 {
			srcs = append(srcs, source{r.kernelUnion(tenantEngine[in.Source]), in.Slowdown})
		}
	}
	if len(srcs) == 0 {
		return nil
	}
	return func(start, base int64) int64 {
		d := base
		for it := 0; it < 20; it++ {
			f := 1.0
			for _, s := range srcs {
				f += s.coef * float64(covered(s.busy, start, start+d)) / float64(d)
			}
			next := max(1, int64(math.Round(float64(base)*f)))
			if next == d {
				break
			}
			d = next
		}
		return d
	}
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
