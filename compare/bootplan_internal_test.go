package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmprof/llmprof/internal/stat"
)

// TestTokenBootstrapMatchesExpandedCounts: a token series' replicates
// (bootPlan.addTokens: the units' multiplicities read through unitGroups
// and SortedView.ByUnit) are those of the series with each token drawn as
// often as its request, expanded to one count per token and read by
// stat.ResampledMean and the plain view, bit for bit. The tokens of a unit
// come in several runs; in one series some are NaN, in the other none (the
// sum without a NaN test per value).
func TestTokenBootstrapMatchesExpandedCounts(t *testing.T) {
	for _, withNaN := range []bool{true, false} {
		tokenBootstrapMatchesExpandedCounts(t, withNaN)
	}
}

func tokenBootstrapMatchesExpandedCounts(t *testing.T, withNaN bool) {
	rng := rand.New(rand.NewPCG(11, 12))
	const units, reps, seed, stream = 40, 203, 3, "tokens"
	var values []float64
	var unit []int32
	for range 600 {
		v := math.Round(1e3 * math.Exp(rng.NormFloat64()))
		if rng.IntN(20) == 0 && withNaN {
			v = math.NaN()
		}
		values = append(values, v)
		unit = append(unit, int32(rng.IntN(units)))
	}
	fam := &Family{Kind: KindLatency}
	specs := []spec{{name: "mean", fam: fam, stat: StatMean}, {name: "p50", fam: fam, q: 0.5}, {name: "p99", fam: fam, q: 0.99}}
	var b bootPlan
	for _, s := range specs {
		b.addTokens(s, values, unit)
	}
	got := b.run(units, 1, reps, seed, stream)

	view := stat.NewSortedView(values)
	expanded := make([]int32, len(values))
	rs := stat.NewResampler(units, 1, seed, stream)
	for rep := range reps {
		counts := rs.Next()
		total := 0
		for j, u := range unit {
			expanded[j] = counts[u]
			total += int(counts[u])
		}
		for _, s := range specs {
			want := stat.ResampledMean(values, expanded, total)
			if s.stat != StatMean {
				want = view.Quantile(expanded, total, s.q)
			}
			if g := got[s.name][rep]; math.Float64bits(g) != math.Float64bits(want) {
				t.Fatalf("NaN %v, replicate %d, %s: %v, want %v", withNaN, rep, s.name, g, want)
			}
		}
	}
}

// TestBootPlanMatchesOneReplicateAtATime: run draws its replicates in
// batches (repBatch) and sums a batch's token series together; every
// statistic of every replicate is what drawing and reading one replicate
// at a time gives (runOneAtATime, run as it was before the batches), bit
// for bit: request series with unknowns, a finite token series and one
// with an infinity (summed one replicate at a time), a ratio, plain and
// block resamples, and a count of replicates that is no multiple of the
// batch.
func TestBootPlanMatchesOneReplicateAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const units = 300
	req := make([]float64, units)
	out := make([]float64, units)
	for i := range req {
		req[i] = math.Round(1e3*math.Exp(rng.NormFloat64())) / 1e3
		out[i] = float64(1 + rng.IntN(200))
		if rng.IntN(25) == 0 {
			req[i] = math.NaN()
		}
	}
	reqInf := slices.Clone(req)
	reqInf[rng.IntN(units)] = math.Inf(1)
	var tok, tokInf []float64
	var unit []int32
	for u := range units {
		for range 1 + rng.IntN(30) {
			v := math.Exp(rng.NormFloat64())
			tok = append(tok, v)
			if rng.IntN(500) == 0 {
				v = math.Inf(1)
			}
			tokInf = append(tokInf, v)
			unit = append(unit, int32(u))
		}
	}
	famReq, famTok, famInf, famReqInf := &Family{Kind: KindLatency}, &Family{Kind: KindLatency}, &Family{Kind: KindLatency}, &Family{Kind: KindLatency}
	plan := func() *bootPlan {
		var b bootPlan
		for _, s := range []spec{{name: "req.mean", fam: famReq, stat: StatMean}, {name: "req.p50", fam: famReq, q: 0.5}, {name: "req.p90", fam: famReq, q: 0.9}} {
			b.add(s, req)
		}
		for _, s := range []spec{{name: "tok.mean", fam: famTok, stat: StatMean}, {name: "tok.p99", fam: famTok, q: 0.99}} {
			b.addTokens(s, tok, unit)
		}
		b.addTokens(spec{name: "inf.mean", fam: famInf, stat: StatMean}, tokInf, unit)
		b.add(spec{name: "reqInf.mean", fam: famReqInf, stat: StatMean}, reqInf)
		b.addRatio("ratio", newRatioSeries(req, out))
		b.addRatio("ratioInf", newRatioSeries(reqInf, out))
		return &b
	}
	for _, block := range []int{1, 7} {
		for _, reps := range []int{1, 4, 101} {
			got := plan().run(units, block, reps, 5, "batch")
			want := plan().runOneAtATime(units, block, reps, 5, "batch")
			if len(got) != len(want) {
				t.Fatalf("block %d, %d replicates: %d statistics, want %d", block, reps, len(got), len(want))
			}
			for name, w := range want {
				for rep := range w {
					if g := got[name][rep]; math.Float64bits(g) != math.Float64bits(w[rep]) {
						t.Fatalf("block %d, %d replicates: %s replicate %d = %v, want %v", block, reps, name, rep, g, w[rep])
					}
				}
			}
		}
	}
}

// runOneAtATime is bootPlan.run before it drew its replicates in
// batches: each replicate drawn and read before the next is drawn.
func (b *bootPlan) runOneAtATime(n, block, reps int, seed uint64, stream string) map[string][]float64 {
	out := map[string][]float64{}
	if n == 0 || (len(b.series) == 0 && len(b.ratios) == 0) {
		return out
	}
	for _, ps := range b.series {
		for _, s := range ps.stats {
			out[s.name] = make([]float64, reps)
		}
	}
	for _, pr := range b.ratios {
		out[pr.name] = make([]float64, reps)
	}
	rs := stat.NewResampler(n, block, seed, stream)
	blocks := rs.Block() > 1
	if blocks {
		for i := range b.series {
			if b.series[i].unit == nil {
				b.series[i].sum, b.series[i].known = stat.PrefixSums(b.series[i].values)
			}
		}
	}
	for rep := range reps {
		counts := rs.Next()
		for _, ps := range b.series {
			var total int
			var blockAvg, tokenSum float64
			spans := blocks && ps.unit == nil
			switch {
			case ps.unit != nil:
				for _, g := range ps.groups {
					c := counts[g.unit]
					if c == 0 {
						continue
					}
					total += int(c) * int(g.end-g.start)
					for _, v := range ps.values[g.start:g.end] {
						if !math.IsNaN(v) {
							tokenSum += float64(c) * v
						}
					}
				}
			case spans:
				blockAvg, total = stat.BlockMean(rs.Spans(), ps.sum, ps.known)
			default:
				total = ps.view.Total(ps.values, counts)
			}
			for _, s := range ps.stats {
				switch {
				case s.stat == StatMean && spans:
					out[s.name][rep] = blockAvg
				case s.stat == StatMean && ps.unit != nil:
					out[s.name][rep] = math.NaN()
					if total != 0 {
						out[s.name][rep] = tokenSum / float64(total)
					}
				case s.stat == StatMean:
					out[s.name][rep] = stat.ResampledMean(ps.values, counts, total)
				default:
					out[s.name][rep] = ps.view.Quantile(counts, total, s.q)
				}
			}
		}
		for _, pr := range b.ratios {
			out[pr.name][rep] = pr.r.resampled(counts)
		}
	}
	return out
}
