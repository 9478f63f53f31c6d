package synth

import (
	"errors"
	"fmt"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// Config describes a synthetic run. DefaultConfig is a realistic starting
// point; every field has a documented default applied by Generate when zero.
type Config struct {
	// Seed draws the workload: arrivals, prompt and completion lengths,
	// cache hits (and, unless NoiseSeed is set, the system's randomness).
	Seed int64
	// NoiseSeed, when nonzero, draws the system's randomness — kernel
	// jitter, CPU stalls — separately from the workload, so that two runs
	// with one Seed and different NoiseSeeds replay the same prompts on
	// the same schedule (a benchmark run twice with its seed) and differ
	// only as a serving system differs from run to run.
	NoiseSeed int64
	// Start is the Unix ns time of the run's first instant.
	Start int64
	// Duration is the span of request arrivals; the run lasts until the last
	// request finishes.
	Duration time.Duration
	Tenants  []Tenant
	Models   []Model

	// Engine timing (per step), in ns. Zero takes the default.
	ScheduleBaseNs     int64 // CPU scheduling before the first launch (default 300 µs)
	SchedulePerReqNs   int64 // + per request in the batch (default 10 µs)
	PostprocessBaseNs  int64 // CPU work after the last GPU op (default 150 µs)
	PostprocessPerReq  int64 // + per request (default 8 µs)
	LaunchNs           int64 // CPU cost of one kernel launch (default 5 µs)
	LoopGapNs          int64 // engine loop overhead between steps (default 40 µs)
	StallProbability   float64
	StallNs            int64 // a CPU stall (a GC pause) delaying launches (default 25 ms)
	TokenizeNsPerToken int64 // default 1 µs per input token (+ 100 µs)
	DetokenizeNs       int64 // after the last token (default 200 µs)
	StreamNs           int64 // flushing the response (default 500 µs)

	// InflatedHitProbability is the share of reported KV-cache hits whose
	// cache key ignored something, so the prefix is recomputed anyway: the
	// span says hit, the latency says miss (the seed article's §2.4).
	InflatedHitProbability float64

	// GPUClock puts the GPU side (what nsys would record) on a second clock.
	GPUClock ClockError
	// OTLPJitterNs moves every OTLP span start and end by up to this much,
	// either way (uniform; synth/jitter.go): real exporters quantize and
	// read their clocks at slightly different moments. Truth is unjittered.
	OTLPJitterNs int64

	// Interference slows a target tenant's engine while a source tenant's
	// engine runs kernels on the same GPU (MPS or time slicing): a kernel of
	// the target's engine takes (1 + Slowdown × overlap) times its base
	// duration, overlap being the share of its interval during which the
	// source's engine had a kernel running (synth/interference.go). Source
	// and target must be served by different engines on one device; the
	// truth of the tenant analysis (docs/tenants.md).
	Interference []Interference
	// CUDAGraphs records decode steps as CUDA graph replays (as vLLM runs
	// them): one cudaGraphLaunch per step, whose correlation ID every kernel
	// of the step carries. Timing is unchanged; only what nsys sees differs.
	CUDAGraphs bool
	// Diurnal modulates every tenant's arrival rate by one shared cycle — the
	// confounder that drives everyone's load (and own batch sizes) together.
	Diurnal *Diurnal
	// Episodes are injected infrastructure faults (a PFC pause storm, KV-cache
	// pressure, GPU clock throttling) with the latency they cause and the
	// metrics that show them; see synth/metrics.go.
	Episodes []Episode
}

// Interference is one injected tenant → tenant effect.
type Interference struct {
	Source, Target string
	Slowdown       float64
	// Mechanism is how the overlap turns into time (interference.go); the
	// zero value is StretchOverlap, the form the kernel view fits.
	Mechanism Mechanism
}

// Diurnal is a shared sinusoidal load driver: rate × (1 + Amplitude ·
// sin(2π t / Period)).
type Diurnal struct {
	Period    time.Duration
	Amplitude float64
}

// ClockError is how a second clock differs from the reference:
// t_gpu = t_ref + OffsetNs + DriftPPM·1e-6·(t_ref − Start) + jitter, with a
// step of StepNs added from StepAt on.
type ClockError struct {
	OffsetNs int64
	DriftPPM float64
	// JitterNs is the standard deviation of Gaussian noise added to every
	// timestamp of mirrored (matched) events.
	JitterNs int64
	StepAt   int64 // Unix ns on the reference clock; 0: no step
	StepNs   int64
}

// Tenant is a client population sending requests to one model.
type Tenant struct {
	Name  string
	Model string
	// Rate is the mean arrival rate in requests per second.
	Rate float64
	// Bursty switches arrivals to an on/off process with the same mean rate:
	// bursts at BurstFactor×Rate, silence in between.
	Bursty      bool
	BurstFactor float64 // default 5
	// InputTokens and OutputTokens are the medians of log-normal lengths.
	InputTokens  int
	OutputTokens int
	// CacheHitProbability is the chance that a prompt's prefix is cached.
	CacheHitProbability float64
	// CachedFraction is the share of the prompt a hit covers (default 0.8).
	CachedFraction float64
}

// Model is one served model: an engine process on one GPU.
type Model struct {
	Name   string
	Device int
	// TP is the tensor-parallel degree; > 1 adds all-reduce kernels.
	TP int
	// MaxBatch is the most requests in one step (default 64).
	MaxBatch int
	// MaxBatchTokens bounds prefill tokens per step (default 4096).
	MaxBatchTokens int
	// KVTokens is the KV-cache capacity in tokens (default 200k).
	KVTokens int
	// Layers is how many transformer blocks the kernel sequence repeats
	// (default 8; each stands for several real layers).
	Layers int
	// Speed scales every kernel duration (1 = default; 2 = twice as slow).
	Speed float64
	// CategorySpeed further scales the kernels of one category
	// ({ingest.CategoryGEMM: 1.3}: GEMMs 30% slower), the regression a diff should
	// blame on that category; a category not listed keeps 1.
	CategorySpeed map[ingest.KernelCategory]float64
}

// DefaultConfig is a three-tenant, two-model run of the given length.
func DefaultConfig(seed int64, d time.Duration) Config {
	return Config{
		Seed:     seed,
		Start:    time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano(),
		Duration: d,
		Tenants: []Tenant{
			{Name: "search", Model: "llama-3.1-8b", Rate: 12, InputTokens: 300, OutputTokens: 40, CacheHitProbability: 0.6},
			{Name: "chat", Model: "llama-3.1-8b", Rate: 6, InputTokens: 800, OutputTokens: 180, CacheHitProbability: 0.3},
			{Name: "batch-eval", Model: "qwen2.5-7b", Rate: 4, Bursty: true, InputTokens: 1500, OutputTokens: 120},
		},
		Models: []Model{
			{Name: "llama-3.1-8b", Device: 0, MaxBatch: 64, KVTokens: 12_000},
			{Name: "qwen2.5-7b", Device: 1, TP: 2, MaxBatch: 48, KVTokens: 90_000},
		},
		StallProbability:       0.003,
		InflatedHitProbability: 0.15,
	}
}

func (c *Config) applyDefaults() {
	def := func(p *int64, v int64) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.ScheduleBaseNs, 300_000)
	def(&c.SchedulePerReqNs, 10_000)
	def(&c.PostprocessBaseNs, 150_000)
	def(&c.PostprocessPerReq, 8_000)
	def(&c.LaunchNs, 5_000)
	def(&c.LoopGapNs, 40_000)
	def(&c.StallNs, 25_000_000)
	def(&c.TokenizeNsPerToken, 1_000)
	def(&c.DetokenizeNs, 200_000)
	def(&c.StreamNs, 500_000)
	for i := range c.Tenants {
		t := &c.Tenants[i]
		if t.BurstFactor == 0 {
			t.BurstFactor = 5
		}
		if t.CachedFraction == 0 {
			t.CachedFraction = 0.8
		}
		if t.InputTokens == 0 {
			t.InputTokens = 512
		}
		if t.OutputTokens == 0 {
			t.OutputTokens = 128
		}
	}
	for i := range c.Models {
		m := &c.Models[i]
		if m.TP == 0 {
			m.TP = 1
		}
		if m.MaxBatch == 0 {
			m.MaxBatch = 64
		}
		if m.MaxBatchTokens == 0 {
			m.MaxBatchTokens = 4096
		}
		if m.KVTokens == 0 {
			m.KVTokens = 200_000
		}
		if m.Layers == 0 {
			m.Layers = 8
		}
		if m.Speed == 0 {
			m.Speed = 1
		}
	}
}

func (c *Config) validate() error {
	if c.Duration <= 0 {
		return errors.New("synth: Duration must be positive")
	}
	if len(c.Tenants) == 0 || len(c.Models) == 0 {
		return errors.New("synth: need at least one tenant and one model")
	}
	models := map[string]bool{}
	for _, m := range c.Models {
		if models[m.Name] {
			return fmt.Errorf("synth: model %q defined twice", m.Name)
		}
		models[m.Name] = true
	}
	modelOf := map[string]string{}
	for _, t := range c.Tenants {
		if !models[t.Model] {
			return fmt.Errorf("synth: tenant %q uses undefined model %q", t.Name, t.Model)
		}
		if t.Rate <= 0 {
			return fmt.Errorf("synth: tenant %q has rate %g; must be positive", t.Name, t.Rate)
		}
		modelOf[t.Name] = t.Model
	}
	device := map[string]int{}
	for _, m := range c.Models {
		device[m.Name] = m.Device
	}
	for _, in := range c.Interference {
		src, ok1 := modelOf[in.Source]
		dst, ok2 := modelOf[in.Target]
		switch {
		case !ok1 || !ok2:
			return fmt.Errorf("synth: interference %s → %s names an unknown tenant", in.Source, in.Target)
		case src == dst:
			return fmt.Errorf("synth: interference %s → %s: both are served by engine %s", in.Source, in.Target, src)
		case device[src] != device[dst]:
			return fmt.Errorf("synth: interference %s → %s: their engines are on different GPUs", in.Source, in.Target)
		case in.Slowdown < 0:
			return fmt.Errorf("synth: interference %s → %s: negative slowdown", in.Source, in.Target)
		}
	}
	if d := c.Diurnal; d != nil && (d.Period <= 0 || d.Amplitude < 0 || d.Amplitude >= 1) {
		return fmt.Errorf("synth: diurnal cycle needs a positive period and an amplitude in [0, 1)")
	}
	return nil
}

// MultiTenantGPUConfig is a run for tenant causal regression: tenants A, B
// and C each have their own engine on GPU 0 and D its own on GPU 1 (a
// negative control, isolated like a MIG instance). A's load slows B by the
// given factor per unit of A's GPU busy fraction; nothing else interferes. A
// shared diurnal cycle drives every tenant's arrivals.
func MultiTenantGPUConfig(seed int64, d time.Duration, slowdown float64) Config {
	c := DefaultConfig(seed, d)
	c.Tenants = []Tenant{
		{Name: "A", Model: "engine-a", Rate: 2, Bursty: true, InputTokens: 1200, OutputTokens: 100},
		{Name: "B", Model: "engine-b", Rate: 4, InputTokens: 300, OutputTokens: 60},
		{Name: "C", Model: "engine-c", Rate: 3, InputTokens: 400, OutputTokens: 80},
		{Name: "D", Model: "engine-d", Rate: 3, InputTokens: 400, OutputTokens: 80},
	}
	// Two layer blocks per step, each three times as slow (a bigger model),
	// keep the kernel and step counts of a long run modest.
	c.Models = []Model{
		{Name: "engine-a", Device: 0, MaxBatch: 48, KVTokens: 100_000, Layers: 2, Speed: 3},
		{Name: "engine-b", Device: 0, MaxBatch: 48, KVTokens: 100_000, Layers: 2, Speed: 3},
		{Name: "engine-c", Device: 0, MaxBatch: 48, KVTokens: 100_000, Layers: 2, Speed: 3},
		{Name: "engine-d", Device: 1, MaxBatch: 48, KVTokens: 100_000, Layers: 2, Speed: 3},
	}
	c.Interference = []Interference{{Source: "A", Target: "B", Slowdown: slowdown}}
	c.Diurnal = &Diurnal{Period: d / 2, Amplitude: 0.5}
	return c
}
