package attribution

import (
	"context"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/nsys"
)

// The kernel names below are the specification of the pattern table. Each
// is a real name: from the nsys exports in the shared test data (short or
// demangled names), or as printed in public vLLM, SGLang, TensorRT-LLM,
// FlashAttention, FlashInfer and NCCL profiles and kernel sources.
func TestCategorize(t *testing.T) {
	cases := []struct {
		name string
		want KernelCategory
	}{
		// GEMM: cuBLAS, cuBLASLt nvjet, CUTLASS, implicit-GEMM convolutions.
		{"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", CategoryGEMM}, // NVIDIA/Fuser report1
		{"nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", CategoryGEMM}, // NVIDIA/Fuser report2
		{"sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_execute_kernel_trt", CategoryGEMM}, // memfusion (TensorRT)
		{"trt_ampere_h16816gemm_64x64_ldg8_relu_stages_64x5_tn_v1", CategoryGEMM},                                                                                   // memfusion
		{"sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize64x64x128_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", CategoryGEMM},                     // vLLM FP8 profile
		{"void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_128x128_32x4_tn_align8>(cutlass_80_tensorop_s16816gemm_bf16_128x128_32x4_tn_align8::Params)", CategoryGEMM},
		{"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn", CategoryGEMM},
		{"void splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasSplitKParams<float>, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, void*, long, float*, int*)", CategoryGEMM},
		{"std::enable_if<!T7, void>::type internal::gemvx::kernel<int, int, __nv_bfloat16, __nv_bfloat16, float, false, true, true, false, 7, false, cublasGemvParamsEx<int, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16, float>>(cublasGemvParamsEx<int, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16, float>)", CategoryGEMM},
		{"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x256x128x1_swiglu", CategoryGEMM}, // SGLang MoE (Triton)
		{"fused_moe_kernel", CategoryGEMM},                                    // vLLM Triton MoE
		{"void deep_gemm::fp8_gemm_kernel<128u, 128u, 128u, 4u, 1u, 1u, 132u, 128u, 128u, 1u, 1u, (deep_gemm::GemmType)0>(__nv_bfloat16*, float*, int*, unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)", CategoryGEMM},
		{"void marlin::Marlin<256, 1, 8, 8, 4, 8, false>(int4 const*, int4 const*, int4*, int4 const*, int, int, int, int)", CategoryGEMM},
		// Attention: FlashAttention 2 and 3, paged attention, FlashInfer,
		// TensorRT-LLM FMHA/XQA/MMHA, KV-cache writes, rotary embeddings.
		{"void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t>>, true, false, false, false, true, true, false, false>(flash::Flash_fwd_params)", CategoryAttention},
		{"void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t>>, 4, 1, true>(flash::Flash_fwd_params)", CategoryAttention},
		{"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>>>>>(flash::FlashAttnFwdSm90<>::Params)", CategoryAttention}, // SGLang FA3
		{"void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, __nv_bfloat16*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16 const*, int, float, int const*, int const*, int, float const*, int, int, int, float const*, float const*)", CategoryAttention},
		{"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, int, int, int, int, int, int, float const*, float const*)", CategoryAttention},
		{"void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)", CategoryAttention},
		{"void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, 128u, 1u, 4u, 8u, 8u, 1u, 1u>>(flashinfer::BatchPrefillPagedParams)", CategoryAttention},
		{"void flashinfer::BatchQKApplyRotaryPosIdsCosSinCacheKernel<true, 128u, 8u, 16u, __nv_bfloat16, long>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, float*, long*, unsigned int, unsigned int, unsigned int, unsigned int, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long, unsigned long)", CategoryAttention},
		{"fmha_v2_flash_attention_bf16_64_64_S_q_paged_kv_256_causal_tma_ws_sm90_kernel", CategoryAttention}, // TensorRT-LLM
		{"void tensorrt_llm::kernels::mmha::masked_multihead_attention_kernel<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, tensorrt_llm::kernels::KVBlockArray, 128, 128, 4, false, false, false, false, false, false, false, false, false, 0u>(tensorrt_llm::kernels::Multihead_attention_params<__nv_bfloat16, false>, tensorrt_llm::kernels::KVBlockArray, tensorrt_llm::kernels::KVLinearBuffer)", CategoryAttention},
		{"void kernel_mha<2u>(unsigned int, float, __nv_bfloat16*, unsigned int const*, KVCacheList<true>, unsigned int, float const*, float const*, unsigned int*, void*)", CategoryAttention},  // TensorRT-LLM XQA
		{"fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)", CategoryAttention}, // xformers
		{"void vllm::merge_attn_states_kernel<__nv_bfloat16, 128u>(__nv_bfloat16*, float*, __nv_bfloat16 const*, float const*, __nv_bfloat16 const*, float const*, unsigned int, unsigned int, unsigned int)", CategoryAttention},
		// Communication: NCCL and custom all-reduce.
		{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", CategoryCommunication},
		{"ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", CategoryCommunication},
		{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", CategoryCommunication},
		{"void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8, true, false>(tensorrt_llm::kernels::ar_fusion::AllReduceFusionParams)", CategoryCommunication},
		// Norm and activation.
		{"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)", CategoryNormActivation},
		{"void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, float, int, int)", CategoryNormActivation},
		{"void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, __nv_bfloat16*, unsigned int, unsigned int, unsigned int, float, float)", CategoryNormActivation}, // SGLang
		{"void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)", CategoryNormActivation},
		{"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>>(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)", CategoryNormActivation},
		{"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)", CategoryNormActivation},
		{"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", CategoryNormActivation}, // torch.compile RMSNorm
		{"triton_poi_fused_mul_silu_slice_1", CategoryNormActivation},
		// Sampling.
		{"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)", CategorySampling},
		{"void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>(at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int)", CategorySampling},
		{"void flashinfer::sampling::TopKTopPSamplingFromProbKernel<1024u, (cub::CUB_200200_800_NS::BlockScanAlgorithm)0, (cub::CUB_200200_800_NS::BlockReduceAlgorithm)2, 4u, true, float, int>(float*, int*, int*, float*, int*, float*, unsigned int, unsigned int, unsigned long, unsigned long)", CategorySampling},
		{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>>(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)", CategorySampling},
		{"void vllm::apply_repetition_penalties_kernel<c10::BFloat16>(c10::BFloat16*, bool const*, bool const*, c10::BFloat16 const*, int, int)", CategorySampling},
		// Other: MoE routing (gating, expert alignment).
		{"void vllm::moe::topkGatingSoftmax<8, 128, 4, 16, 32, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)", CategoryOther},
		{"void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int, int, int, int, unsigned long, int*)", CategoryOther},
		// Elementwise: quantization, PyTorch's pointwise and reduce kernels,
		// copies, pooling, nvFuser's fusions, plain vector adds, FBGEMM
		// embeddings, cub sorts, optimizer steps (the last three from HTA's
		// trace-diff pair).
		{"void vllm::scaled_fp8_quant_kernel<c10::BFloat16>(c10::Float8_e4m3fn*, c10::BFloat16 const*, float const*, long)", CategoryElementwise},
		{"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul>>(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)", CategoryElementwise},
		{"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)", CategoryElementwise}, // HTA MI250
		{"sm50_xmma_pooling_fw_4d_FP16FP32NHWC_Average_FastDiv_CAlign8_execute_kernel_trt", CategoryElementwise},                                                                                                                                                                     // memfusion
		{"nvfuser_pointwise_f0_c1_r0_g0", CategoryElementwise}, // NVIDIA/Fuser
		{"copyVectorizedKernel", CategoryElementwise},
		{"kernVectorAdd", CategoryElementwise}, // p4arth
		{"vectorAdd", CategoryElementwise},     // sdroruganti
		{"void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 2ul>(at::GenericPackedTensorAccessor<float, 1ul, at::RestrictPtrTraits, long>)", CategoryElementwise},
		{"void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int, int>::Policy800, false, long, int, int, int>(int*, int*, int*, int const*)", CategoryElementwise},
		{"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float, float, float, float, float, float, adamMode_t, float, int, int>(int, int*)", CategoryElementwise},
		// AMD: hipBLASLt/rocBLAS Tensile GEMMs (HTA's MI250 trace), vLLM's
		// ROCm skinny GEMMs (csrc/rocm/skinny_gemms.cu), Composable Kernel
		// GEMM, attention and normalization, AITER's assembly attention
		// (hsa/…/fmha_v3_fwd: _ZN5aiter18fmha_fwd_hd128_fp8E) and paged
		// attention (csrc/kernels/attention_v1.cu), RCCL.
		{"Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_GRVWA2_GRVWB2_GSUAMB_ISA90a_IU1_K1_LBSPPA128", CategoryGEMM},
		{"void wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 2>(int, int, int, int, int, __hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, int)", CategoryGEMM},
		{"void LLGemm1_kernel<__hip_bfloat16, 8>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, int)", CategoryGEMM},
		{"void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<ck::tensor_layout::gemm::RowMajor>, true, (ck::InMemoryDataOperationEnum)0, 1, (ck::TailNumber)1>(ck::GridwiseGemm_xdl_cshuffle_v3<>::Argument)", CategoryGEMM},
		{"void ck_tile::kentry<256, 1, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<>>>(ck_tile::FmhaFwdKernel<>::FmhaFwdBatchModeKargs)", CategoryAttention},
		{"void ck::kernel_normalization<ck::GridwiseNormalizationWelfordVariance_mk_to_mk<ck::half_t>>(ck::tensor_descriptor<>)", CategoryNormActivation},
		{"_ZN5aiter18fmha_fwd_hd128_fp8E", CategoryAttention},
		{"void aiter::paged_attention_ll4mi_QKV_mfma16_kernel<__hip_bfloat16, __hip_bfloat16, 256, 128, 16, 4>(__hip_bfloat16 const*, __hip_bfloat16 const*)", CategoryAttention},
		{"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", CategoryCommunication}, // RCCL keeps NCCL's names
		{"rcclGenericKernel", CategoryCommunication},
		// Triton: Inductor's generated kernels by their kind and fused ops,
		// hand-written attention kernels by their function names (vLLM's
		// prefix_prefill.py _fwd_kernel, ROCm/tutorial _attn_fwd, SGLang's
		// decode _fwd_grouped_kernel_stage1); the shared triton_example.
		{"triton_poi_fused_add_all_reduce_0", CategoryElementwise},
		{"triton_poi_fused_add_cos_sin_0", CategoryElementwise}, // HTA triton_example
		{"triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_1", CategoryNormActivation},
		{"triton_tem_fused_mm_0", CategoryGEMM},
		{"triton_tem_fused_flex_attention_0", CategoryAttention},
		{"_fwd_kernel", CategoryAttention},
		{"_attn_fwd", CategoryAttention},
		{"_fwd_grouped_kernel_stage1", CategoryAttention},
		{"kernel_unified_attention_2d", CategoryAttention},
		{"_layer_norm_fwd_1pass_kernel", CategoryNormActivation},
		// cuDNN: batch norm, convolutions plain and fused with ReLU (HTA's
		// ns-resolution and critical-path traces).
		{"void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float, float, float, cudnnTensorStruct, float const*)", CategoryNormActivation},
		{"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>(cudnnTensorStruct, float const*, cudnnTensorStruct, float*)", CategoryNormActivation},
		{"cudnn_infer_volta_scudnn_128x64_relu_medium_nn_v1", CategoryGEMM},
		{"void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int, int, int, float const*, int, float const*, int, float*)", CategoryGEMM},
		{"void fft2d_r2c_32x32<float, false, 5u, true>(float2*, float const*, int, int, int, int, int, int, int, int, int, cudnn::reduced_divisor, bool, int2, int, int)", CategoryGEMM},
		// Other: what says nothing.
		{"kernel_7", CategoryOther},
		{"", CategoryOther},
	}
	for _, c := range cases {
		if got := Categorize(c.name); got != c.want {
			t.Errorf("Categorize(%.90q) = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestKernelCategoryNames(t *testing.T) {
	want := []string{"gemm", "attention", "communication", "norm/activation", "sampling", "elementwise", "memcpy", "memset", "other"}
	for i, w := range want {
		if got := KernelCategory(i).String(); got != w {
			t.Errorf("category %d = %q, want %q", i, got, w)
		}
	}
	if NumKernelCategories != len(want) {
		t.Errorf("NumKernelCategories = %d", NumKernelCategories)
	}
}

func TestCategorizeOp(t *testing.T) {
	tr := ingest.New()
	s := tr.Strings.Intern
	cases := []struct {
		name string
		op   ingest.GPUOp
		want KernelCategory
	}{
		{"memcpy by kind", ingest.GPUOp{Kind: ingest.OpMemcpy, Name: s("[CUDA memcpy Host-to-Device]")}, CategoryMemcpy},
		{"memset by kind", ingest.GPUOp{Kind: ingest.OpMemset, Name: s("[CUDA memset]")}, CategoryMemset},
		{"sync is not GPU work of a category", ingest.GPUOp{Kind: ingest.OpSync, Name: s("[CUDA Stream sync]")}, CategoryOther},
		{"whole graph", ingest.GPUOp{Kind: ingest.OpGraph, Name: s("[CUDA graph 3]")}, CategoryOther},
		{"kernel by full name", ingest.GPUOp{Kind: ingest.OpKernel, Name: s("void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*)"), ShortName: s("rms_norm_kernel")}, CategoryNormActivation},
		{"short name when the full one says nothing", ingest.GPUOp{Kind: ingest.OpKernel, Name: s("void wrapper<Impl>(Params)"), ShortName: s("flash_fwd_kernel")}, CategoryAttention},
	}
	cache := NewCategoryCache(tr)
	for _, c := range cases {
		if got := CategorizeOp(tr, &c.op); got != c.want {
			t.Errorf("%s: CategorizeOp = %s, want %s", c.name, got, c.want)
		}
		if got := cache.Of(&c.op); got != c.want {
			t.Errorf("%s: cache = %s, want %s", c.name, got, c.want)
		}
	}
	// Strings interned after the cache was made are handled too.
	late := ingest.GPUOp{Kind: ingest.OpKernel, Name: s("ncclDevKernel_AllGather_RING_LL")}
	if got := cache.Of(&late); got != CategoryCommunication {
		t.Errorf("late-interned name: %s", got)
	}
}

// Every kernel of the real exports: the cache agrees with CategorizeOp, and
// the exports' GEMMs are found (nvjet in the Fuser files, implicit-GEMM
// convolutions in the TensorRT one).
func TestCategorizeRealFiles(t *testing.T) {
	gemms := map[string]int{}
	for _, path := range shareddata.Glob(t, "testdata/nsys/*.sqlite") {
		tr, err := nsys.Decoder{Tables: nsys.Kernels | nsys.MemoryOps}.DecodeFile(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		cache := NewCategoryCache(tr)
		for i := range tr.GPUOps {
			op := &tr.GPUOps[i]
			c := cache.Of(op)
			if c != CategorizeOp(tr, op) {
				t.Fatalf("%s: cache and CategorizeOp disagree on %q", path, tr.Str(op.Name))
			}
			if c == CategoryGEMM {
				gemms[path]++
			}
		}
	}
	for path, want := range map[string]int{
		"nvidia-fuser-report1-nsys2025.1.1.sqlite":          3,
		"nvidia-fuser-report2-nsys2024.6.2.sqlite":          1,
		"leiwang1999-memfusion-report1-nsys2023.1.2.sqlite": 21, // of 36: the rest are copies, pooling, a permutation
	} {
		got := 0
		for p, n := range gemms {
			if len(p) >= len(path) && p[len(p)-len(path):] == path {
				got = n
			}
		}
		if got != want {
			t.Errorf("%s: %d GEMM kernels, want %d", path, got, want)
		}
	}
}

// TestVocabularyDerived: every category and bucket has one distinct,
// non-empty name in each place it appears, so a new table row can never
// print "bucket" or drop a column.
func TestVocabularyDerived(t *testing.T) {
	seen := map[string]Bucket{}
	cols := map[string]Bucket{}
	for _, b := range Buckets() {
		bi := b.Info()
		if bi.Name == "" || bi.Column == "" || bi.Short == "" || bi.Since < 1 || strings.HasPrefix(bi.Name, "bucket") {
			t.Errorf("bucket %d has incomplete names %+v", b, bi)
		}
		if o, dup := seen[bi.Name]; dup {
			t.Errorf("buckets %d and %d are both %q", o, b, bi.Name)
		}
		if o, dup := cols[bi.Column]; dup {
			t.Errorf("buckets %d and %d share column %q", o, b, bi.Column)
		}
		seen[bi.Name], cols[bi.Column] = b, b
	}
	for _, c := range ingest.KernelCategories() {
		b := gpuBucket(c)
		if got, ok := b.Category(); !ok || got != c {
			t.Errorf("bucket of %s maps back to %v, %v", c, got, ok)
		}
		if b.String() != "gpu."+c.Info().Key {
			t.Errorf("bucket of %s is %q", c, b)
		}
		if gpuPriority[b] == 0 {
			t.Errorf("category %s has no overlap priority", c)
		}
	}
	if BucketGPUIdle != BucketGPULast+1 || NumBuckets != BucketUnattributed+1 {
		t.Error("the GPU buckets are not contiguous")
	}
}
