// Command nsysgen writes a synthetic Nsight Systems SQLite export of an LLM
// serving run for the nsys benchmark (bench/nsys.sh): engine steps, each an
// NVTX range "step N span_id=<hex>" on the engine thread, with the kernels
// of a transformer forward pass, every one launched by a cudaLaunchKernel
// call on that thread (matching correlation IDs), plus the step's input and
// output copies. Kernel names are real ones from vLLM, FlashAttention,
// cuBLAS/nvjet and NCCL profiles. The output is deterministic for a given
// -kernels and -seed.
//
// Usage:
//
//	go run ./bench/nsysgen -kernels 5000000 -o /tmp/nsys-5M.sqlite
package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys"
)

// kernel is a kernel of the forward pass: its names and typical duration.
type kernel struct {
	name, short string
	ns          int64
	stream      uint32
}

var layer = []kernel{
	{"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", "fused_add_rms_norm_kernel", 6_000, 7},
	{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 60_000, 7},
	{"void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)", "rotary_embedding_kernel", 4_000, 7},
	{"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, int, int, int, int, int, int, float const*, float const*)", "reshape_and_cache_flash_kernel", 3_000, 7},
	{"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t>>, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)", "flash_fwd_splitkv_kernel", 25_000, 7},
	{"nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", 36_000, 7},
	{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 25_000, 8},
	{"void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)", "act_and_mul_kernel", 5_000, 7},
}

var head = []kernel{
	{"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)", "Kernel2", 80_000, 7},
	{"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", "cunn_SoftMaxForward", 12_000, 7},
	{"void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int)", "gatherTopK", 20_000, 7},
}

func main() {
	kernels := flag.Int("kernels", 1_000_000, "number of kernels")
	layers := flag.Int("layers", 32, "transformer layers per step")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("o", "nsys-bench.sqlite", "output file")
	flag.Parse()
	start := time.Now()
	t := generate(*kernels, *layers, *seed)
	built := time.Since(start)
	if err := nsys.WriteSQLite(*out, t, nsys.WriteOptions{SessionStart: session}); err != nil {
		fmt.Fprintln(os.Stderr, "nsysgen:", err)
		os.Exit(1)
	}
	fi, err := os.Stat(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nsysgen:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "nsysgen: %s: %d kernels, %d spans, %d bytes (built in %s, written in %s)\n",
		*out, *kernels, t.CPURecordCount(), fi.Size(), built.Round(time.Millisecond), (time.Since(start) - built).Round(time.Millisecond))
}

// session is the synthetic capture's start (2025-03-12T15:36:59Z).
const session = 1_741_793_819_042_497_997

const (
	pid       = 50556
	engineTid = 50556
)

func generate(n, layers int, seed uint64) *ingest.Trace {
	rng := rand.New(rand.NewPCG(seed, 0x6e737973))
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: "nsysgen"}}
	t.Processes = []ingest.Process{{Pid: pid, Name: "python3"}}
	t.Threads = []ingest.Thread{{Pid: pid, Tid: engineTid, Name: "EngineCore_0"}}
	t.Devices = []ingest.Device{{ID: 0, Name: "NVIDIA H200", SMs: 132, MemoryBytes: 150121545728}}
	t.GPUOps = make([]ingest.GPUOp, 0, n+n/100)
	t.Spans = make([]ingest.Span, 0, n/100)
	t.APICalls = make([]ingest.APICall, 0, n)
	type names struct{ name, short ingest.StrID }
	intern := func(ks []kernel) []names {
		out := make([]names, len(ks))
		for i, k := range ks {
			out[i] = names{t.Strings.Intern(k.name), t.Strings.Intern(k.short)}
		}
		return out
	}
	layerNames, headNames := intern(layer), intern(head)
	launch := t.Strings.Intern("cudaLaunchKernel")
	memcpyAPI := t.Strings.Intern("cudaMemcpyAsync")
	htod, dtoh := t.Strings.Intern(nsys.MemcpyName(1)), t.Strings.Intern(nsys.MemcpyName(2))

	now := int64(session + 1_000_000_000)
	corr := uint32(0)
	gpuFree := now
	// op appends a GPU op and the API call that launched it; the GPU runs it
	// after the launch and after the previous op on its queue.
	op := func(o ingest.GPUOp, api ingest.StrID, dur int64) {
		corr++
		launchDur := 2_000 + rng.Int64N(3_000)
		t.APICalls = append(t.APICalls, ingest.APICall{Name: api, Start: now, End: now + launchDur, Pid: pid, Tid: engineTid,
			Correlation: corr, Origin: ingest.OriginCUDARuntime})
		o.Start = max(gpuFree, now+launchDur+1_000)
		o.End = o.Start + dur
		o.Correlation, o.Pid, o.Device = corr, pid, 0
		t.GPUOps = append(t.GPUOps, o)
		gpuFree = o.End
		now += launchDur + 500
	}
	jitter := func(ns int64) int64 { return ns/2 + rng.Int64N(ns) }
	count := 0
	for step := 0; count < n; step++ {
		stepStart := now
		var spanID [8]byte
		for i := range spanID {
			spanID[i] = byte(rng.UintN(256))
		}
		nvtx := len(t.Spans)
		t.Spans = append(t.Spans, ingest.Span{Name: t.Strings.Intern(fmt.Sprintf("step %d span_id=%s", step, hex.EncodeToString(spanID[:]))),
			Start: stepStart, Pid: pid, Tid: engineTid, Origin: ingest.OriginNVTX, Resource: -1, Scope: -1})
		op(ingest.GPUOp{Kind: ingest.OpMemcpy, Name: htod, Copy: ingest.CopyHtoD, Shape: t.InternShape(ingest.OpShape{Bytes: 8192}), Stream: 7}, memcpyAPI, jitter(4_000))
		kernelOp := func(k kernel, nm names) {
			op(ingest.GPUOp{Kind: ingest.OpKernel, Name: nm.name, ShortName: nm.short, Stream: k.stream,
				Shape: t.InternShape(ingest.OpShape{Grid: [3]uint32{132, 1, 1}, Block: [3]uint16{256, 1, 1}})}, launch, jitter(k.ns))
			count++
		}
		for l := 0; l < layers && count < n; l++ {
			for i, k := range layer {
				if count < n {
					kernelOp(k, layerNames[i])
				}
			}
		}
		for i, k := range head {
			if count < n {
				kernelOp(k, headNames[i])
			}
		}
		op(ingest.GPUOp{Kind: ingest.OpMemcpy, Name: dtoh, Copy: ingest.CopyDtoH, Shape: t.InternShape(ingest.OpShape{Bytes: 1024}), Stream: 7}, memcpyAPI, jitter(3_000))
		now = max(now, gpuFree) + 20_000 + rng.Int64N(200_000) // scheduling between steps
		t.Spans[nvtx].End = now
	}
	t.Validate()
	return t
}
