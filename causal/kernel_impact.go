package causal

import (
	"math"

	"github.com/llmprof/llmprof/align"
)

// The kernel view's impact: what a pair's stretch costs the target's
// requests, step by step (kernel.go has the model).

// impact is the source's share of the target's request latency, for the
// requests of the target's tenants that the target's steps served. rowOf is
// each op's index in rows (-1 for ops not in rows).
func impact(in KernelInput, tm *TenantMap, target string, rows []kernelRow, rowOf []int32, x []float64, p *KernelPair) []Impact {
	if math.IsNaN(float64(p.CILowPct)) || math.IsNaN(float64(p.CIHighPct)) {
		return nil
	}
	// The point estimate and the interval's ends.
	coefs := [3]float64{float64(p.Coef), float64(p.CILowPct) / 100, float64(p.CIHighPct) / 100}
	member := map[string]bool{}
	for _, m := range tm.Members(target) {
		member[m] = true
	}
	n := len(in.Requests)
	// sums[phase][coef][request]: phase 0 up to the first token, 1 after.
	var sums [2][3][]float64
	for ph := range sums {
		for b := range sums[ph] {
			sums[ph][b] = make([]float64, n)
		}
	}
	for si := range in.Steps {
		s := &in.Steps[si]
		var extra [3]float64
		any := false
		for _, oi := range s.Ops {
			if oi < 0 || int(oi) >= len(rowOf) || rowOf[oi] < 0 {
				continue
			}
			r := rowOf[oi]
			any = true
			for b, c := range coefs {
				// The kernel took base·(1 + s·x): s·x/(1 + s·x) of it is
				// the source's.
				extra[b] += float64(rows[r].dur) * c * x[r] / (1 + c*x[r])
			}
		}
		if !any {
			continue
		}
		for _, ri := range s.Requests {
			if ri < 0 || int(ri) >= n {
				continue
			}
			q := &in.Requests[ri]
			if !member[q.Tenant.String()] || q.TTFT <= 0 {
				continue
			}
			ph := 1
			if s.End <= q.Arrival+q.TTFT+firstTokenTol(s, in.SlackNs) {
				ph = 0
			}
			for b := range coefs {
				sums[ph][b][ri] += extra[b]
			}
		}
	}
	pr := make([]float64, n)
	for ri := range pr {
		pr[ri] = (sums[0][0][ri] + sums[1][0][ri]) / 1e6
	}
	p.perRequest = pr
	var out []Impact
	for ph, m := range []Metric{MetricTTFT, MetricTPOT} {
		var tot [3]float64
		var base float64
		count := 0
		for ri := range in.Requests {
			q := &in.Requests[ri]
			if !member[q.Tenant.String()] {
				continue
			}
			lat, ok := q.Latency(m)
			if !ok {
				continue
			}
			div := 1.0
			if m == MetricTPOT {
				div = float64(q.OutputTokens - 1)
			}
			for b := range coefs {
				tot[b] += sums[ph][b][ri] / div
			}
			base += float64(lat)
			count++
		}
		if count == 0 {
			continue
		}
		c := float64(count) * 1e6
		lo, hi := math.Min(tot[1], tot[2]), math.Max(tot[1], tot[2])
		out = append(out, Impact{
			Metric: m, Requests: count, EffectMs: Float(tot[0] / c), CILowMs: Float(lo / c), CIHighMs: Float(hi / c),
			BaselineMs: Float(base / c), Share: Float(tot[0] / base),
		})
	}
	return out
}

// firstTokenTol is how far after a request's first token a step of its
// batch may end and still count as up to the first token (TTFT) rather than
// after it (TPOT). The step that produces the first token ends at the
// token's own instant, and the two are written by different clocks (the
// step span or NVTX range, the request's token event), so with no tolerance
// jitter of microseconds puts about half of those steps after the token.
//
// The tie rule: a step ending no later than the token plus the larger of the
// alignment's timestamp slack and half the step's own duration counts as up
// to the first token. Half the step's duration is safe: the engine runs its
// steps one after another, so the step after the one that produced the
// token starts when that one ends and ends a whole step's length after the
// token; only jitter of more than half a step could mistake one for the
// other.
func firstTokenTol(s *KernelStep, slackNs int64) int64 {
	if slackNs <= 0 {
		slackNs = align.DefaultOptions().TimestampSlackNs
	}
	if s.Start > 0 && s.End > s.Start {
		return max(slackNs, (s.End-s.Start)/2)
	}
	return slackNs
}

// RequestCost returns, per source tenant, the milliseconds each request
// (KernelInput.Requests' order, n of them) lost to that source's concurrent
// work on its kernels: the point estimate of the Impact of every pair that
// is not a negative control, summed over targets. Sources without such a
// pair are absent. diff compares these series as tenant.NAME
// (compare.TenantSeries).
func (r *KernelResult) RequestCost(n int) map[string][]float64 {
	if r == nil {
		return nil
	}
	out := map[string][]float64{}
	for i := range r.Pairs {
		p := &r.Pairs[i]
		if p.Isolated || !p.Estimable || len(p.perRequest) != n {
			continue
		}
		s := out[p.Source]
		if s == nil {
			s = make([]float64, n)
			out[p.Source] = s
		}
		for j, v := range p.perRequest {
			s[j] += v
		}
	}
	return out
}
