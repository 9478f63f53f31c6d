package causal

import (
	"math"
	"math/rand/v2"

	"github.com/llmprof/llmprof/ingest"
)

// This file is a small data-generating process with known truth (statistics
// reference B.4), so the tests can ask whether the estimators recover what
// was injected and nothing else. Tenants share a GPU; each has a load (a
// GPU busy fraction per second: a level, a share of a common diurnal driver
// c(t), on/off bursts and noise) realized as kernels, and requests whose
// log TTFT and TPOT are
//
//	log y = μ + lengths + γ·batch + Σ_A β_{A→B}·x_A + η
//
// with x_A the tenant A's busy fraction averaged over the request's window,
// batch driven by c(t) too (the confounder: c moves every load and every
// tenant's own batch size), and η AR(1) over a tenant's consecutive requests
// (requests close in time share shocks, which is why errors are clustered).

type simTenant struct {
	name     string
	pid      uint32
	instance int16   // MIG GPU instance; -1 none
	base     float64 // load level
	amp      float64 // response of the load to c(t)
	burst    float64 // load added while "on"
	rate     float64 // requests per second
}

type simConfig struct {
	seed    uint64
	seconds int
	tenants []simTenant
	// effects[source][target] is β per unit busy fraction on TPOT; TTFT
	// gets ttftScale·β.
	effects    map[string]map[string]float64
	ttftScale  float64
	confounder float64 // κ: how strongly c(t) drives rates and batch sizes
	batchCoef  float64 // γ: effect of one more request in the batch on log latency
	rho        float64 // AR(1) coefficient of η
	noise      float64 // marginal sd of η
}

// defaultSim has tenants A, B and C on MIG instance 0 of GPU 0 and D alone
// on instance 1 (the negative control); only A → B carries an effect.
func defaultSim(seed uint64) simConfig {
	return simConfig{
		seed:    seed,
		seconds: 900,
		tenants: []simTenant{
			{"A", 101, 0, 0.25, 0.15, 0.35, 1.5},
			{"B", 102, 0, 0.20, 0.10, 0.20, 1.5},
			{"C", 103, 0, 0.20, 0.15, 0.30, 1.5},
			{"D", 104, 1, 0.20, 0.15, 0.30, 1.5},
		},
		effects:    map[string]map[string]float64{"A": {"B": 1.0}},
		ttftScale:  0.8,
		confounder: 0.8,
		batchCoef:  0.05,
		rho:        0.5,
		noise:      0.2,
	}
}

type simRun struct {
	cfg      simConfig
	trace    *ingest.Trace
	requests []Request
	// load[k][s] is tenant k's true busy fraction in second s.
	load [][]float64
}

// truth returns the injected effect of source on target for metric m, in
// percent per step of load.
func (r *simRun) truth(source, target string, m Metric, step float64) float64 {
	b := r.cfg.effects[source][target]
	if m == MetricTTFT {
		b *= r.cfg.ttftScale
	}
	return pct(b, step)
}

func simulate(cfg simConfig) *simRun {
	rng := rand.New(rand.NewPCG(cfg.seed, 0x5eed))
	T := cfg.seconds
	phase := rng.Float64() * 2 * math.Pi
	c := make([]float64, T)
	for s := range c {
		c[s] = math.Sin(2*math.Pi*float64(s)/float64(T) + phase)
	}
	run := &simRun{cfg: cfg, trace: ingest.New()}
	for _, tn := range cfg.tenants {
		u := make([]float64, T)
		on := rng.IntN(2) == 1
		for s := range u {
			if rng.Float64() < 1.0/20 {
				on = !on
			}
			v := tn.base + tn.amp*c[s] + 0.03*rng.NormFloat64()
			if on {
				v += tn.burst
			}
			u[s] = math.Min(0.95, math.Max(0, v))
		}
		run.load = append(run.load, u)
	}
	// exposure integrates a tenant's true load over [t0, t1] (ns); it is
	// written separately from Load.Exposure on purpose.
	exposure := func(k int, t0, t1 int64) float64 {
		if t1 <= t0 {
			return 0
		}
		sum := 0.0
		for s := int(t0 / 1e9); s <= int((t1-1)/1e9) && s < T; s++ {
			lo, hi := max(t0, int64(s)*1e9), min(t1, int64(s+1)*1e9)
			sum += run.load[k][s] * float64(hi-lo)
		}
		return sum / float64(t1-t0)
	}

	for _, tn := range cfg.tenants {
		var effects []struct {
			k int
			b float64
		}
		for si, src := range cfg.tenants {
			if b := cfg.effects[src.name][tn.name]; b != 0 {
				effects = append(effects, struct {
					k int
					b float64
				}{si, b})
			}
		}
		etaTTFT, etaTPOT := 0.0, 0.0
		innov := cfg.noise * math.Sqrt(1-cfg.rho*cfg.rho)
		// Poisson arrivals by thinning: λ(t) = rate·(1 + κ/2·c(t)).
		maxRate := tn.rate * (1 + cfg.confounder/2)
		t := 0.0
		for {
			t += rng.ExpFloat64() / maxRate
			if t >= float64(T) {
				break
			}
			cs := c[int(t)]
			if rng.Float64()*maxRate > tn.rate*(1+cfg.confounder/2*cs) {
				continue
			}
			in := int(math.Exp(math.Log(64) + rng.Float64()*math.Log(32)))
			out := int(math.Exp(math.Log(16) + rng.Float64()*math.Log(32)))
			batch := float64(1 + poisson(rng, 3*(1+cfg.confounder*cs)))
			etaTTFT = cfg.rho*etaTTFT + innov*rng.NormFloat64()
			etaTPOT = cfg.rho*etaTPOT + innov*rng.NormFloat64()
			logTTFT := math.Log(0.15e9) + 0.3*math.Log(float64(in)/512) + cfg.batchCoef*batch + etaTTFT
			logTPOT := math.Log(0.03e9) + 0.05*math.Log(float64(in)/512) + cfg.batchCoef*batch + etaTPOT
			arrival := int64(t * 1e9)
			// The windows depend on the latencies and the latencies on the
			// exposure over the windows: iterate to the fixed point.
			ttft, tpot := math.Exp(logTTFT), math.Exp(logTPOT)
			for iter := 0; iter < 6; iter++ {
				first := arrival + int64(ttft)
				end := first + int64(tpot*float64(out-1))
				lt, lp := logTTFT, logTPOT
				for _, e := range effects {
					lt += cfg.ttftScale * e.b * exposure(e.k, arrival, first)
					lp += e.b * exposure(e.k, first, end)
				}
				ttft, tpot = math.Exp(lt), math.Exp(lp)
			}
			first := arrival + int64(ttft)
			run.requests = append(run.requests, Request{
				Tenant: TenantOf(tn.name), Arrival: arrival, End: first + int64(tpot*float64(out-1)),
				TTFT: int64(ttft), TPOT: int64(tpot), BatchSize: batch,
				InputTokens: in, OutputTokens: out, Device: 0, Instance: tn.instance,
			})
		}
	}
	run.buildTrace(rng)
	return run
}

// buildTrace realizes each tenant's busy fraction as kernels: per second,
// one busy interval at a random offset, split into two overlapping kernels
// on two streams so the busy load must take their union.
func (r *simRun) buildTrace(rng *rand.Rand) {
	tr := r.trace
	tr.Sources = []ingest.Source{{Path: "sim", Format: "test"}}
	pidKey, nameKey := tr.Strings.Intern("process.pid"), tr.Strings.Intern("service.name")
	kernel := tr.Strings.Intern("sim_kernel")
	for k, tn := range r.cfg.tenants {
		tr.Resources = append(tr.Resources, ingest.Resource{Attrs: []ingest.Attr{
			ingest.NewAttr(pidKey, ingest.IntValue(int64(tn.pid))),
			ingest.NewAttr(nameKey, ingest.StringValue(tr.Strings.Intern(tn.name))),
		}})
		tr.Processes = append(tr.Processes, ingest.Process{Pid: tn.pid, Name: "/usr/bin/python3"})
		for s, u := range r.load[k] {
			d := int64(math.Round(u * 1e9))
			if d <= 0 {
				continue
			}
			start := int64(s)*1e9 + rng.Int64N(1e9-d+1)
			split1, split2 := start+d*6/10, start+d*4/10
			tr.GPUOps = append(tr.GPUOps,
				ingest.GPUOp{Start: start, End: split1, Name: kernel, Stream: 1, Pid: tn.pid, Device: 0, Kind: ingest.OpKernel},
				ingest.GPUOp{Start: split2, End: start + d, Name: kernel, Stream: 2, Pid: tn.pid, Device: 0, Kind: ingest.OpKernel},
			)
		}
	}
	tr.Validate()
}

// analyze runs the whole path: tenants from the trace, busy load from its
// kernels, then Analyze.
func (r *simRun) analyze(opts Options) *Result {
	tm := MapTenants(r.trace, MapOptions{})
	end := int64(r.cfg.seconds) * 1e9
	for i := range r.requests {
		end = max(end, r.requests[i].End)
	}
	load := BusyLoad(r.trace.GPUOps, tm, NewGrid(0, end, 1e9))
	res, err := Analyze(Input{Requests: r.requests, Load: load, Mapping: tm}, opts)
	if err != nil {
		panic(err) // the simulator's input is always usable
	}
	return res
}

func poisson(rng *rand.Rand, mean float64) int {
	// Knuth's method; means here are below 10.
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}
