// Package comparetest generates synthetic compare.Runs with known truth for
// the tests of diff (compare, report, the command): a serving workload whose
// per-token time is split over the attribution buckets, with regressions
// injected where a test wants them. It stands in for what the attribution
// stage will hand to diff, so diff's statistics can be checked against a
// ground truth before any trace is involved.
package comparetest

import (
	"math"
	"math/rand/v2"

	"github.com/llmprof/llmprof/compare"
)

// Workload describes a synthetic run. The zero value of every knob except
// Requests and Seed means "no change from the reference workload".
type Workload struct {
	Requests int
	Seed     uint64
	RunID    string
	Model    string // default "llama-3-8b"
	// LogSD is the spread of a request's speed (log scale, shared by all
	// its tokens); default 0.2.
	LogSD float64
	// AttentionFactor multiplies the attention kernels' time (1.5 = 50%
	// slower); default 1.
	AttentionFactor float64
	// NeighbourMS is time per output token stolen by another tenant,
	// "noisy", split evenly between GEMM and attention kernels (a noisy
	// neighbour on the same GPU); default 0.
	NeighbourMS float64
	// QueueFactor multiplies queueing time; default 1.
	QueueFactor float64
	// RequestsOnly leaves out the token-level breakdown (stock vLLM).
	RequestsOnly bool
}

// decodeMS is the reference time per decode token in each token bucket. A
// slice, not a map, so sums run in one order and runs are bit-identical.
var decodeMS = []struct {
	bucket string
	ms     float64
}{
	{"cpu.schedule", 0.3},
	{"gpu.gemm", 6.0},
	{"gpu.attention", 3.0},
	{"gpu.communication", 0.5},
	{"gpu.norm_activation", 0.4},
	{"gpu.sampling", 0.2},
	{"gpu.memcpy", 0.1},
	{"gpu.other", 0.3},
	{"gpu.idle", 0.5},
	{"cpu.postprocess", 0.2},
}

// prefillShare splits a prefill's time over the token buckets.
var prefillShare = map[string]float64{
	"cpu.schedule":        0.02,
	"gpu.gemm":            0.60,
	"gpu.attention":       0.25,
	"gpu.norm_activation": 0.05,
	"gpu.memcpy":          0.03,
	"gpu.idle":            0.03,
	"cpu.postprocess":     0.02,
}

// Run generates the run. The same Workload always yields the same Run.
func (w Workload) Run() compare.Run {
	def := func(v, d float64) float64 {
		if v == 0 {
			return d
		}
		return v
	}
	logSD := def(w.LogSD, 0.2)
	attn := def(w.AttentionFactor, 1)
	queueF := def(w.QueueFactor, 1)
	model := w.Model
	if model == "" {
		model = "llama-3-8b"
	}
	rng := rand.New(rand.NewPCG(w.Seed, 0x5eed))
	n := w.Requests
	r := compare.Run{
		RunID:     w.RunID,
		Models:    []string{model},
		Requests:  n,
		Completed: n,
		SLO:       "ttft=250ms,tpot=25ms",
		Stages:    map[string]compare.Series{},
		Tenants:   map[string]compare.Series{},
	}
	col := func(m map[string]compare.Series, k string) compare.Series {
		if m[k] == nil {
			m[k] = make(compare.Series, n)
		}
		return m[k]
	}
	if !w.RequestsOnly {
		// Every bucket exists; those a token never touches stay zero.
		r.Tokens = map[string]compare.Series{}
		r.FirstToken = map[string]compare.Series{}
		for _, b := range compare.TokenBuckets {
			col(r.Tokens, b)
			col(r.FirstToken, b)
		}
	}
	var arrival, lastEnd float64
	for i := range n {
		arrival += rng.ExpFloat64() * 50 // 20 requests/s
		speed := math.Exp(rng.NormFloat64() * logSD)
		out := 20 + rng.IntN(180)
		queue := queueF * 4 * rng.ExpFloat64()
		tokenize := 1 + 0.5*rng.Float64()
		prefill := 40 * speed * math.Exp(rng.NormFloat64()*0.1)
		ttft := queue + tokenize + prefill
		// First token: queue, then the prefill's kernels.
		if !w.RequestsOnly {
			r.FirstToken["queue"][i] = queue
			r.FirstToken["other"][i] = tokenize
			for b, share := range prefillShare {
				v := share * prefill
				if b == "gpu.attention" {
					v *= attn
				}
				r.FirstToken[b][i] = v
			}
		}
		if b := prefillShare["gpu.attention"] * prefill; attn != 1 {
			ttft += (attn - 1) * b
			prefill += (attn - 1) * b
		}
		var decode float64
		gaps := make([]float64, 0, out-1)
		sums := make([]float64, len(decodeMS))
		for range out - 1 {
			var gap float64
			noise := math.Exp(rng.NormFloat64() * 0.05)
			for j, d := range decodeMS {
				v := d.ms * speed * noise
				if d.bucket == "gpu.attention" {
					v *= attn
				}
				if d.bucket == "gpu.gemm" || d.bucket == "gpu.attention" {
					v += w.NeighbourMS / 2
				}
				sums[j] += v
				gap += v
			}
			gaps = append(gaps, gap)
			decode += gap
		}
		stream := 0.5 + rng.Float64()
		detok := 0.2 * float64(out) / 100
		e2e := ttft + decode + stream + detok
		r.TTFT = append(r.TTFT, ttft)
		r.TPOT = append(r.TPOT, decode/float64(out-1))
		r.E2E = append(r.E2E, e2e)
		r.Queue = append(r.Queue, queue)
		r.OutputTokens = append(r.OutputTokens, float64(out))
		r.ITL = append(r.ITL, gaps...)
		col(r.Stages, "queue")[i] = queue
		col(r.Stages, "tokenize")[i] = tokenize
		col(r.Stages, "prefill")[i] = prefill
		col(r.Stages, "decode")[i] = decode
		col(r.Stages, "detokenize")[i] = detok
		col(r.Stages, "stream")[i] = stream
		if !w.RequestsOnly {
			for b, v := range r.FirstToken {
				r.Tokens[b][i] = v[i]
			}
			for j, d := range decodeMS {
				r.Tokens[d.bucket][i] += sums[j]
			}
			r.Tokens["other"][i] += stream + detok
		}
		if w.NeighbourMS > 0 {
			col(r.Tenants, "noisy")[i] = w.NeighbourMS * float64(out-1)
		}
		if ttft <= 250 && decode/float64(out-1) <= 25 {
			r.Good++
		}
		lastEnd = max(lastEnd, arrival+e2e)
	}
	r.DurationMS = lastEnd
	return r
}
