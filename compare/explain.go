package compare

import (
	"cmp"
	"math"
	"slices"
)

// explain fills a latency metric's Explanation: for each attribution bucket,
// the candidate's mean minus the baseline's over the requests that make up
// the statistic — all requests with a value for p50 and mean, the requests
// at or above the side's own p90 or p99 for the tails — so a p99 regression
// is explained by what the slowest requests spent their time on.
//
// The decomposition depends on the metric: TTFT by the first token's
// buckets (request stages when token buckets are absent), E2E by the
// request's token buckets (or stages), TPOT and ITL per output token (decode
// tokens' buckets divided by output tokens − 1 when the first token's
// buckets are known). Time attributed to another tenant, "tenant:NAME", is
// whole-request time, so it joins E2E, TPOT and ITL but not TTFT. Queue is a
// single stage and gets no explanation. Deltas for a tail statistic explain
// the tail's mean, so they need not sum exactly to the quantile's change.
func (c *comparison) explain(w *work) {
	s := w.spec
	if s.kind() != KindLatency {
		return
	}
	series := s.series()
	b, k := c.base, c.cand
	both := func(f int) bool { return b.hasFam[f] && k.hasFam[f] }
	perToken := series == "tpot" || series == "itl"
	fam := -1
	switch series {
	case "ttft":
		if both(famFirst) {
			fam, w.m.Breakdown = famFirst, "first token"
		}
	case "e2e":
		if both(famTokens) {
			fam, w.m.Breakdown = famTokens, "token buckets"
		}
	case "tpot", "itl":
		if both(famTokens) {
			fam = famTokens
		}
	}
	// Queueing is one stage: there is nothing to decompose.
	if series == "queue" {
		return
	}
	if fam < 0 && both(famStages) {
		fam, w.m.Breakdown = famStages, "request stages"
	}
	if perToken {
		w.m.Breakdown = "per output token"
		if b.out == nil || k.out == nil {
			return
		}
	}
	type source struct {
		label string
		f     int
	}
	var sources []source
	if fam >= 0 {
		for _, bucket := range sortedKeys(b.fam[fam]) {
			sources = append(sources, source{bucket, fam})
		}
	}
	// Tenant time is attributed over the whole request, so it explains E2E
	// and, per token, TPOT and ITL — not TTFT.
	if both(famTenants) && series != "ttft" {
		for _, t := range sortedKeys(b.fam[famTenants]) {
			sources = append(sources, source{"tenant:" + t, famTenants})
		}
	}
	if len(sources) == 0 {
		w.m.Breakdown = ""
		return
	}
	// Decode tokens only when the first token's share can be removed.
	decodeOnly := perToken && fam == famTokens && both(famFirst)
	selB, selK := c.selection(b, s), c.selection(k, s)
	var out []BucketDelta
	for _, src := range sources {
		bucket := src.label
		if src.f == famTenants {
			bucket = src.label[len("tenant:"):]
		}
		value := func(p *pooled, i int) float64 {
			v := p.fam[src.f][bucket][i]
			if !perToken {
				return v
			}
			n := p.out[i]
			if decodeOnly && src.f == famTokens {
				first := p.fam[famFirst][bucket]
				if first == nil {
					return math.NaN()
				}
				v -= first[i]
				n--
			}
			if !(n > 0) {
				return math.NaN()
			}
			return v / n
		}
		mb, mk := meanOver(b, selB, value), meanOver(k, selK, value)
		if math.IsNaN(mb) || math.IsNaN(mk) {
			continue
		}
		out = append(out, BucketDelta{Bucket: src.label, DeltaMS: mk - mb})
	}
	w.m.Explanation, w.m.Mixed = orderBySign(out, w.m.Delta)
}

// orderBySign puts the buckets that moved the way the metric did (the sign
// of delta) first, largest first, then the others, largest first; mixed
// says none moved its way or those moving the other way add up to at least
// half as much, so the explanation cannot be read as a cause.
func orderBySign(out []BucketDelta, delta float64) ([]BucketDelta, bool) {
	sign := 1.0
	if delta < 0 {
		sign = -1
	}
	with := func(d BucketDelta) bool { return d.DeltaMS*sign > 0 }
	slices.SortStableFunc(out, func(x, y BucketDelta) int {
		if wx, wy := with(x), with(y); wx != wy {
			if wx {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(math.Abs(y.DeltaMS), math.Abs(x.DeltaMS)); c != 0 {
			return c
		}
		return cmp.Compare(x.Bucket, y.Bucket)
	})
	var same, other float64
	for _, d := range out {
		if with(d) {
			same += math.Abs(d.DeltaMS)
		} else {
			other += math.Abs(d.DeltaMS)
		}
	}
	if len(out) == 0 || math.IsNaN(delta) || delta == 0 {
		return out, false
	}
	return out, same == 0 || other >= same/2
}

// selection returns the requests of a side that make up the statistic: all
// with a value for p50 and mean (all requests for itl, whose values are
// tokens), those at or above the side's quantile for p90 and p99.
func (c *comparison) selection(p *pooled, s spec) []int {
	var idx []int
	if s.isITL() {
		for i := range p.n {
			idx = append(idx, i)
		}
		return idx
	}
	v := p.series[s.series()]
	threshold := math.Inf(-1)
	if s.stat == "p90" || s.stat == "p99" {
		threshold = quantileOf(known(v), s.q)
	}
	for i, x := range v {
		if !math.IsNaN(x) && x >= threshold {
			idx = append(idx, i)
		}
	}
	return idx
}

// meanOver averages value over the selected requests, skipping unknowns.
func meanOver(p *pooled, idx []int, value func(*pooled, int) float64) float64 {
	var s float64
	n := 0
	for _, i := range idx {
		if v := value(p, i); !math.IsNaN(v) {
			s += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}
