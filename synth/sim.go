package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"unsafe"

	"github.com/llmprof/llmprof/ingest"
)

// Generate simulates a run. The same Config always yields the same Run.
func Generate(cfg Config) (*Run, error) {
	cfg.applyDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6c6c6d70726f66)) // "llmprof"
	run := &Run{Config: cfg, OpNames: slices.Clone(opNames[:])}
	modelIndex := map[string]int{}
	for i, m := range cfg.Models {
		modelIndex[m.Name] = i
		run.Engines = append(run.Engines, Engine{
			Model: m.Name, Device: m.Device, TP: m.TP,
			Pid:       uint32(4100 + 100*i),
			Tid:       uint32(4100 + 100*i + 7),
			LoadStart: cfg.Start - 40e9 + int64(i)*1e9,
			LoadEnd:   cfg.Start - 5e9 + int64(i)*1e9,
		})
	}
	for _, t := range cfg.Tenants {
		e := &run.Engines[modelIndex[t.Model]]
		e.Tenants = append(e.Tenants, t.Name)
	}
	run.arrivals(rng, modelIndex)
	if cfg.NoiseSeed != 0 {
		rng = rand.New(rand.NewPCG(uint64(cfg.NoiseSeed), 0x6e6f697365)) // "noise"
	}
	// Engines whose work slows others are simulated first, so that their
	// kernels are known when the engines they slow run.
	// Each engine's ops wait in its buffer and go into run.Ops in one copy
	// at the end; with interference, before the next engine's stretcher
	// reads its sources' kernels there.
	var held []*opBuffer
	next := 0 // the index in run.Ops of the next engine's first op
	for _, e := range run.engineOrder(modelIndex) {
		if len(cfg.Interference) > 0 {
			run.Ops, held = moveOps(run.Ops, held), nil
		}
		sim := &engineSim{run: run, cfg: &cfg, model: &cfg.Models[e], engine: e, rng: rng, ops: opBuffer{base: next}}
		sim.stretch = run.stretcher(e, modelIndex)
		sim.simulate()
		next = sim.ops.len()
		held = append(held, &sim.ops)
	}
	run.Ops = moveOps(run.Ops, held)
	for i := range run.Requests {
		if run.Requests[i].End > run.End {
			run.End = run.Requests[i].End
		}
	}
	return run, nil
}

// engineOrder puts interference sources before their targets (one level:
// an engine that is both slowed and slows another is slowed only by engines
// already simulated).
func (r *Run) engineOrder(modelIndex map[string]int) []int {
	first := map[int]bool{}
	tenantEngine := map[string]int{}
	for _, t := range r.Config.Tenants {
		tenantEngine[t.Name] = modelIndex[t.Model]
	}
	for _, in := range r.Config.Interference {
		first[tenantEngine[in.Source]] = true
	}
	var order, rest []int
	for e := range r.Engines {
		if first[e] {
			order = append(order, e)
		} else {
			rest = append(rest, e)
		}
	}
	return append(order, rest...)
}

// arrivals draws every tenant's requests and their lengths, then orders them
// by arrival and numbers them.
func (r *Run) arrivals(rng *rand.Rand, modelIndex map[string]int) {
	cfg := &r.Config
	end := cfg.Start + cfg.Duration.Nanoseconds()
	for _, t := range cfg.Tenants {
		tt := cfg.Start
		on, phaseEnd := true, int64(0)
		if t.Bursty {
			phaseEnd = cfg.Start + expNs(rng, 2e9)
		}
		for {
			rate := t.Rate
			if t.Bursty {
				for tt >= phaseEnd {
					on = !on
					mean := 2e9
					if !on {
						mean = 2e9 * (t.BurstFactor - 1)
					}
					phaseEnd += expNs(rng, mean)
					if !on {
						tt = phaseEnd
					}
				}
				rate = t.Rate * t.BurstFactor
			}
			peak := 1.0
			if d := cfg.Diurnal; d != nil {
				peak = 1 + d.Amplitude
			}
			tt += expNs(rng, 1e9/(rate*peak))
			if t.Bursty && tt >= phaseEnd {
				continue // the burst ended before this arrival
			}
			if tt >= end {
				break
			}
			if d := cfg.Diurnal; d != nil {
				// Thinning (Lewis & Shedler 1979): accept with rate(t)/peak.
				phase := 2 * math.Pi * float64(tt-cfg.Start) / float64(d.Period.Nanoseconds())
				if rng.Float64() > (1+d.Amplitude*math.Sin(phase))/peak {
					continue
				}
			}
			in := logNormalInt(rng, t.InputTokens, 0.5)
			out := logNormalInt(rng, t.OutputTokens, 0.6)
			req := Request{
				Tenant: t.Name, Model: t.Model, Engine: modelIndex[t.Model],
				Arrival: tt, InputTokens: in, OutputTokens: out, Finish: "stop",
			}
			if out >= 8*t.OutputTokens {
				req.Finish = "length"
			}
			if rng.Float64() < t.CacheHitProbability {
				req.CacheHit = true
				req.CachedTokens = int(float64(in) * t.CachedFraction)
				req.InflatedHit = rng.Float64() < cfg.InflatedHitProbability
			}
			req.Enqueued = tt + 100_000 + int64(in)*cfg.TokenizeNsPerToken
			r.Requests = append(r.Requests, req)
		}
	}
	slices.SortStableFunc(r.Requests, func(a, b Request) int {
		switch {
		case a.Arrival < b.Arrival:
			return -1
		case a.Arrival > b.Arrival:
			return 1
		}
		return 0
	})
	for i := range r.Requests {
		q := &r.Requests[i]
		q.Index = i
		q.ID = fmt.Sprintf("req-%06d", i)
		fillID(rng, q.TraceID[:])
		fillID(rng, q.SpanID[:])
	}
}

// engineSim is the continuous-batching loop of one engine.
type engineSim struct {
	run    *Run
	cfg    *Config
	model  *Model
	engine int
	rng    *rand.Rand

	pending []int // this engine's requests not yet enqueued, by enqueue time
	waiting []int // FIFO; preempted requests go to the front
	running []int // admission order
	// generated counts tokens emitted per request (by index).
	generated map[int]int
	// preemptedAt holds when a waiting request was evicted.
	preemptedAt map[int]int64
	corr        uint32
	// stretch, when set, returns how long a kernel of base duration takes
	// when it starts at a time (interference from other engines' kernels
	// running concurrently on the GPU; see interference.go).
	stretch *stretch
	// ops are the engine's ops, moved into run.Ops by Generate (moveOps).
	ops opBuffer
	// plan is kernelPlan's buffer, reused step after step: a fresh slice
	// grown op by op was a third of the simulation's CPU.
	plan []Op
}

// opBuffer collects an engine's ops in chunks of a fixed size and hands
// them over in one copy: appending to run.Ops one op at a time grew a slice
// of millions of ops (then pointerful and 104 bytes) by 1.25× a step, which
// copied each op about four times, and the collector scanned every copy
// (70% of a simulation's CPU).
type opBuffer struct {
	base   int // len(run.Ops) when the engine started
	n      int
	chunks [][]Op
}

const opChunk = 1 << 14

// len is the index in run.Ops that the next op will have.
func (b *opBuffer) len() int { return b.base + b.n }

func (b *opBuffer) add(op Op) {
	if k := len(b.chunks); k == 0 || len(b.chunks[k-1]) == opChunk {
		b.chunks = append(b.chunks, make([]Op, 0, opChunk))
	}
	last := &b.chunks[len(b.chunks)-1]
	*last = append(*last, op)
	b.n++
}

// moveOps appends the buffers' ops to dst, whose length must be the first
// buffer's base, each following buffer's base the end of the one before:
// one allocation for all, so that no engine's ops are copied twice. Past
// opRelease bytes of ops, the chunks copied are given back to the system
// as it goes and at the end, so that the ops are not resident twice over
// and the collector's next goal is set from the ops held once (ops hold no
// pointer: each collection this takes marks only the rest of the run).
func moveOps(dst []Op, bufs []*opBuffer) []Op {
	n := 0
	for _, b := range bufs {
		n += b.n
	}
	dst = slices.Grow(dst, n)
	size := int(unsafe.Sizeof(Op{}))
	copied := 0
	for _, b := range bufs {
		for i, c := range b.chunks {
			dst = append(dst, c...)
			b.chunks[i] = nil
			if copied += len(c); copied*size >= opRelease {
				debug.FreeOSMemory()
				copied = 0
			}
		}
		b.chunks, b.n = nil, 0
	}
	if n*size >= opRelease {
		debug.FreeOSMemory()
	}
	return dst
}

// opRelease is how many bytes of ops moveOps copies between two returns
// of the chunks to the system (a 70 s demo run's).
const opRelease = 128 << 20

func (s *engineSim) simulate() {
	s.generated = map[int]int{}
	s.preemptedAt = map[int]int64{}
	for i := range s.run.Requests {
		if s.run.Requests[i].Engine == s.engine {
			s.pending = append(s.pending, i)
		}
	}
	slices.SortStableFunc(s.pending, func(a, b int) int {
		ea, eb := s.run.Requests[a].Enqueued, s.run.Requests[b].Enqueued
		switch {
		case ea < eb:
			return -1
		case ea > eb:
			return 1
		}
		return 0
	})
	s.corr = uint32(1000 + 1_000_000*s.engine)
	t := s.cfg.Start
	for len(s.pending) > 0 || len(s.waiting) > 0 || len(s.running) > 0 {
		if len(s.waiting) == 0 && len(s.running) == 0 {
			if next := s.run.Requests[s.pending[0]].Enqueued; next > t {
				t = next
			}
		}
		for len(s.pending) > 0 && s.run.Requests[s.pending[0]].Enqueued <= t {
			s.waiting = append(s.waiting, s.pending[0])
			s.pending = s.pending[1:]
		}
		t = s.step(t)
		t += s.jitter(s.cfg.LoopGapNs, 0.3)
	}
}

// ctx is a running request's context length (prompt plus generated tokens).
func (s *engineSim) ctx(i int) int { return s.run.Requests[i].InputTokens + s.generated[i] }

// step runs one engine iteration starting at t and returns its end.
func (s *engineSim) step(start int64) int64 {
	m := s.model
	// Preempt the most recently admitted requests until this step's decode
	// tokens fit in the KV cache (vLLM's recompute policy).
	need := 0
	for _, i := range s.running {
		need += s.ctx(i) + 1
	}
	kvTokens := s.run.kvCapacity(s.engine, start)
	for need > kvTokens && len(s.running) > 1 {
		last := s.running[len(s.running)-1]
		s.running = s.running[:len(s.running)-1]
		need -= s.ctx(last) + 1
		s.preemptedAt[last] = start
		s.waiting = append([]int{last}, s.waiting...)
	}
	decoders := slices.Clone(s.running)
	// Admit waiting requests while batch, token budget and KV allow.
	type prefill struct{ req, tokens int }
	var prefills []prefill
	budget := m.MaxBatchTokens
	for len(s.waiting) > 0 && len(s.running) < m.MaxBatch {
		i := s.waiting[0]
		q := &s.run.Requests[i]
		ctx := s.ctx(i)
		compute := ctx
		if s.generated[i] == 0 && q.CacheHit && !q.InflatedHit {
			compute = ctx - q.CachedTokens
		}
		if need+ctx+1 > kvTokens && len(s.running) > 0 {
			break
		}
		if compute > budget && len(prefills) > 0 {
			break
		}
		s.waiting = s.waiting[1:]
		s.running = append(s.running, i)
		need += ctx + 1
		budget -= compute
		prefills = append(prefills, prefill{i, compute})
		if at, ok := s.preemptedAt[i]; ok {
			q.Preemptions = append(q.Preemptions, Interval{at, start})
			delete(s.preemptedAt, i)
		}
		if len(q.Steps) == 0 {
			q.FirstScheduled = start
		}
	}
	if len(s.running) == 0 {
		return start
	}
	stepIdx := len(s.run.Steps)
	st := Step{Index: stepIdx, Engine: s.engine, Start: start, FirstOp: s.ops.len()}
	fillID(s.rng, st.TraceID[:])
	fillID(s.rng, st.SpanID[:])
	var p, sumSq, ctxDecode int
	for _, pf := range prefills {
		p += pf.tokens
		sumSq += pf.tokens * pf.tokens
	}
	for _, i := range decoders {
		ctxDecode += s.ctx(i)
	}
	st.PrefillTokens, st.DecodeTokens = p, len(decoders)
	switch {
	case len(prefills) > 0 && len(decoders) > 0:
		st.Phase = "mixed"
	case len(prefills) > 0:
		st.Phase = "prefill"
	default:
		st.Phase = "decode"
	}
	st.Requests = slices.Clone(s.running)
	batch := len(st.Requests)

	// CPU scheduling, then the launch sequence.
	cpu := start + s.jitter(s.cfg.ScheduleBaseNs+s.cfg.SchedulePerReqNs*int64(batch), 0.1)
	stallAt := -1
	kernels := s.kernelPlan(p, len(decoders), len(prefills), batch, ctxDecode, sumSq)
	if s.rng.Float64() < s.cfg.StallProbability {
		stallAt = 1 + s.rng.IntN(len(kernels)-1)
		st.Stalled = true
	}
	var gpuEnd int64
	stepFactor := 1.0
	if s.stretch != nil {
		var window int64
		for _, kp := range kernels {
			window += kp.End // kernelPlan put the duration in End
		}
		stepFactor = s.stretch.step(cpu, window)
	}
	for k, kp := range kernels {
		if k == stallAt {
			cpu += s.jitter(s.cfg.StallNs, 0.3)
		}
		s.corr++
		op := kp
		op.Step = stepIdx
		op.LaunchStart = cpu
		op.LaunchEnd = cpu + s.jitter(s.cfg.LaunchNs, 0.2)
		cpu = op.LaunchEnd
		op.Start = op.LaunchEnd + 2_000
		if k > 0 && gpuEnd+1_000 > op.Start {
			op.Start = gpuEnd + 1_000
		}
		base := op.End // kernelPlan put the duration in End
		dur := base
		if s.stretch != nil {
			dur = s.stretch.kernel(op.Start, dur, stepFactor)
		}
		slow := s.run.episodeSlowdown(s.engine, op.Category, op.Start)
		dur = int64(float64(dur) * slow)
		if s.stretch != nil {
			op.Interference = dur - int64(float64(base)*slow)
		}
		op.End = op.Start + dur
		op.Correlation = s.corr
		gpuEnd = op.End
		s.ops.add(op)
	}
	st.EndOp = s.ops.len()
	// The engine thread synchronizes, then post-processes (sampling output,
	// stop checks, detokenizer hand-off).
	syncReturn := max(cpu, gpuEnd) + 2_000
	st.End = syncReturn + s.jitter(s.cfg.PostprocessBaseNs+s.cfg.PostprocessPerReq*int64(batch), 0.1)

	// Every request in the batch emits one token at the end of the step.
	still := s.running[:0]
	for _, i := range s.running {
		q := &s.run.Requests[i]
		q.Steps = append(q.Steps, stepIdx)
		q.Tokens = append(q.Tokens, st.End)
		s.generated[i]++
		if s.generated[i] >= q.OutputTokens {
			q.StreamStart = st.End + s.jitter(s.cfg.DetokenizeNs, 0.2)
			q.End = q.StreamStart + s.jitter(s.cfg.StreamNs, 0.3)
			continue
		}
		still = append(still, i)
	}
	s.running = still
	s.run.Steps = append(s.run.Steps, st)
	return st.End
}

// The ops' names: Op.NameID indexes Run.OpNames, which Generate starts as
// opNames.
const (
	kGEMMqkv uint16 = iota
	kGEMMo
	kGEMMhead
	kFlash
	kPaged
	kRMSNorm
	kSiluMul
	kAllReduce
	kSoftmax
	kTopK
	kHtoD
	kDtoH
	kMemset
)

// opNames are kernel names as they appear in vLLM profiles on Hopper, and
// the copies' and fills' as nsys names them.
var opNames = [...]string{
	kGEMMqkv:   "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
	kGEMMo:     "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT",
	kGEMMhead:  "cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>",
	kFlash:     "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t>>, true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)",
	kPaged:     "void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, __nv_bfloat16*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16 const*, int, float, int const*, int const*, int, float const*, int, int, int, float const*, float const*)",
	kRMSNorm:   "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
	kSiluMul:   "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
	kAllReduce: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
	kSoftmax:   "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
	kTopK:      "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int)",
	kHtoD:      "[CUDA memcpy Host-to-Device]",
	kDtoH:      "[CUDA memcpy Device-to-Host]",
	kMemset:    "[CUDA memset]",
}

// kernelPlan returns the step's ops in launch order with their durations in
// End (Generate turns them into times). p prefill tokens, d decoding
// requests, np prefilling requests, ctxDecode the decoders' total context,
// sumSq the sum of squared prefill lengths (attention is quadratic). The
// slice is the engine's buffer: valid until the next call.
func (s *engineSim) kernelPlan(p, d, np, batch, ctxDecode, sumSq int) []Op {
	m := s.model
	T := float64(p + d)
	ops := s.plan[:0]
	add := func(name uint16, cat ingest.KernelCategory, kind OpKind, ns float64, grid, block uint32, bytes uint64) {
		f := m.Speed
		if c, ok := m.CategorySpeed[cat]; ok {
			f *= c
		}
		dur := int64(ns * f * (0.95 + 0.1*s.rng.Float64()))
		ops = append(ops, Op{NameID: name, Category: cat, Kind: kind, End: max(dur, 1_000), GridX: grid, BlockX: block, Bytes: bytes})
	}
	add(kHtoD, ingest.CategoryMemcpy, MemcpyHtoD, 4_000+0.5*T, 0, 0, uint64(8*(p+d)))
	gemm := func(factor float64) float64 { return factor * (60_000 + 900*T) }
	for l := 0; l < m.Layers; l++ {
		add(kRMSNorm, ingest.CategoryNormActivation, KernelOp, 6_000+10*T, uint32(p+d), 256, 0)
		add(kGEMMqkv, ingest.CategoryGEMM, KernelOp, gemm(1.0), 132, 384, 0)
		if np > 0 {
			add(kFlash, ingest.CategoryAttention, KernelOp, 20_000+50*float64(p)+0.02*float64(sumSq), uint32(np*32), 128, 0)
		}
		if d > 0 {
			add(kPaged, ingest.CategoryAttention, KernelOp, 15_000+4*float64(ctxDecode), uint32(d*32), 128, 0)
		}
		add(kGEMMo, ingest.CategoryGEMM, KernelOp, gemm(0.6), 132, 384, 0)
		if m.TP > 1 {
			add(kAllReduce, ingest.CategoryCommunication, KernelOp, 25_000+50*T, 32, 512, 0)
		}
		add(kRMSNorm, ingest.CategoryNormActivation, KernelOp, 6_000+10*T, uint32(p+d), 256, 0)
		add(kGEMMqkv, ingest.CategoryGEMM, KernelOp, gemm(1.6), 132, 384, 0)
		add(kSiluMul, ingest.CategoryNormActivation, KernelOp, 5_000+20*T, uint32(p+d), 1024, 0)
		add(kGEMMo, ingest.CategoryGEMM, KernelOp, gemm(1.2), 132, 384, 0)
		if m.TP > 1 {
			add(kAllReduce, ingest.CategoryCommunication, KernelOp, 25_000+50*T, 32, 512, 0)
		}
	}
	add(kRMSNorm, ingest.CategoryNormActivation, KernelOp, 6_000+10*T, uint32(p+d), 256, 0)
	add(kGEMMhead, ingest.CategoryGEMM, KernelOp, 80_000+1_500*float64(batch), 132, 256, 0)
	// The sampler zeroes its per-request penalty counts before it samples.
	add(kMemset, ingest.CategoryMemset, Memset, 1_500+2*float64(batch), 0, 0, uint64(4*batch*1024))
	add(kSoftmax, ingest.CategorySampling, KernelOp, 12_000+300*float64(batch), uint32(batch), 1024, 0)
	add(kTopK, ingest.CategorySampling, KernelOp, 20_000+500*float64(batch), uint32(batch), 1024, 0)
	add(kDtoH, ingest.CategoryMemcpy, MemcpyDtoH, 3_000, 0, 0, uint64(8*batch))
	s.plan = ops
	return ops
}

// jitter returns mean·(1 ± frac·u), u uniform in [−1, 1], at least 1 ns.
func (s *engineSim) jitter(mean int64, frac float64) int64 {
	v := float64(mean) * (1 + frac*(2*s.rng.Float64()-1))
	return max(int64(v), 1)
}

func expNs(rng *rand.Rand, mean float64) int64 {
	return max(int64(rng.ExpFloat64()*mean), 1)
}

// logNormalInt draws a log-normal integer with the given median, clamped to
// [1, 8·median].
func logNormalInt(rng *rand.Rand, median int, sigma float64) int {
	v := float64(median) * math.Exp(sigma*rng.NormFloat64())
	return min(max(int(v), 1), 8*median)
}

func fillID(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	if b[0] == 0 { // never the all-zero (absent) ID
		b[0] = 1
	}
}
