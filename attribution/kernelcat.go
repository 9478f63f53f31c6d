package attribution

import (
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// KernelCategory is what a GPU op does, at the level a latency breakdown
// needs; the table of categories, their names and the names derived from
// them live in ingest (ingest/category.go).
type KernelCategory = ingest.KernelCategory

// The kernel categories, in report order.
const (
	CategoryGEMM           = ingest.CategoryGEMM
	CategoryAttention      = ingest.CategoryAttention
	CategoryCommunication  = ingest.CategoryCommunication
	CategoryNormActivation = ingest.CategoryNormActivation
	CategorySampling       = ingest.CategorySampling
	CategoryElementwise    = ingest.CategoryElementwise
	CategoryMemcpy         = ingest.CategoryMemcpy
	CategoryMemset         = ingest.CategoryMemset
	CategoryOther          = ingest.CategoryOther
	NumKernelCategories    = ingest.NumKernelCategories
)

// kernelPatterns is the name-pattern table: a kernel belongs to the first
// row with a substring of its lower-cased name. Order matters, and each row
// says why it sits where it does. The names in kernelcat_test.go — from the
// real nsys exports and Kineto traces in the shared test data and from
// vLLM, SGLang, TensorRT-LLM, FlashAttention, FlashInfer, cuBLAS, cuDNN,
// NCCL/RCCL, hipBLASLt, Composable Kernel and AITER profiles and sources —
// are the specification, one test case per vendor family.
var kernelPatterns = []struct {
	cat KernelCategory
	sub []string
}{
	// Collectives first: an all-reduce fused with a norm (TensorRT-LLM's
	// allreduce_fusion, vLLM's fused all-reduce + RMSNorm) is communication
	// time on the critical path. RCCL keeps NCCL's kernel names
	// (ncclDevKernel_…); its own generic kernel says rccl.
	{CategoryCommunication, []string{"nccl", "rccl", "allreduce", "all_reduce", "allgather", "all_gather", "reducescatter", "reduce_scatter",
		"alltoall", "all_to_all", "cross_device_reduce", "mscclpp", "nvshmem", "deep_ep"}},
	// Triton kernels' own normalization kernels before the attention row's
	// "_fwd_kernel" (vLLM's and FlashAttention's Triton layer norm is
	// _layer_norm_fwd_1pass_kernel).
	{CategoryNormActivation, []string{"_layer_norm_fwd", "_layer_norm_bwd", "_rms_norm_fwd", "_rms_norm_bwd", "_rmsnorm_fwd"}},
	// Attention before GEMM: FlashAttention's demangled names carry
	// cutlass types (cutlass::bfloat16_t, cutlass::device_kernel<flash::…>).
	// KV-cache writes and rotary embeddings are part of the attention block.
	// "flash::" and not "flash": FlashInfer's norm and sampling kernels live
	// in flashinfer::norm and flashinfer::sampling. Composable Kernel's
	// attention is ck_tile::FmhaFwdKernel, AITER's assembly attention
	// aiter::fmha_fwd_… and paged_attention_ll4mi_…: both say fmha or
	// attention. Triton attention kernels are named after the function:
	// _fwd_kernel (vLLM's prefix prefill, SGLang's extend attention),
	// _attn_fwd (the Triton tutorial and ROCm's flash attention),
	// _fwd_grouped_kernel_stage1 (SGLang's decode attention).
	{CategoryAttention, []string{"attention", "attn", "flash_fwd", "flash_bwd", "flash::", "flashattn", "flash_mla", "fmha", "mha",
		"xformers", "xqa", "prefillwith", "decodewith", "splitkv", "pagedkv", "paged_kv", "kvcache", "kv_cache",
		"reshape_and_cache", "concat_and_cache", "rotary", "_rope", "rope_", "_mla", "mla_",
		"_fwd_kernel", "_bwd_kernel", "_fwd_grouped_kernel", "_attn_fwd", "_attn_bwd"}},
	// Dense and grouped matrix products, whatever the library: cuBLAS
	// (…gemm…, gemv, splitKreduce), cuBLASLt's nvjet, CUTLASS, DeepGEMM,
	// Marlin, Triton matmuls and Inductor's templates (triton_tem_fused_mm,
	// see tritonCategory), hipBLASLt/rocBLAS's Tensile kernels (Cijk_…),
	// vLLM's ROCm skinny GEMMs (wvSplitK…, LLGemm1_kernel), Composable
	// Kernel's (ck::kernel_gemm_…), AITER's fused MoE (fmoe, ck_moe).
	// Convolutions are GEMMs too, fused activation or not (cuDNN's
	// …scudnn_…_relu_…, implicit-GEMM fprop, dgrad/wgrad engines, FFT and
	// Winograd); "xmma" alone would take sm50_xmma_pooling and "conv"
	// alone the dtype converters.
	{CategoryGEMM, []string{"gemm", "gemv", "cublas", "cutlass", "nvjet", "matmul", "bmm", "_mm_", "splitkreduce", "dot_kernel",
		"fused_moe_kernel", "marlin", "tensorop", "wgmma", "cijk_", "wvsplitk", "llgemm", "fmoe", "ck_moe",
		"scudnn", "convolution", "convolve", "conv2d", "conv3d", "conv1d", "conv_fwd", "conv_bwd", "grouped_conv", "fprop", "dgrad", "wgrad",
		"fft2d_", "fft3d_", "winograd"}},
	// MoE routing (gating softmax, top-k of experts, token sorting) is not
	// token sampling, though it says "topk" and "softmax".
	{CategoryOther, []string{"moe_align", "topkgating", "moe_sum", "grouped_topk", "moe_fused_gate", "moe_permute", "moe_unpermute", "expert"}},
	// Normalization and activation, including torch.compile's fused RMSNorm
	// (triton_red_fused_…_mean_…_rsqrt), cuDNN's batch norm (bn_fw_tr_1C11_
	// kernel_NCHW, bn_bw_1C11_kernel_new) and Composable Kernel's
	// (ck::kernel_normalization…).
	{CategoryNormActivation, []string{"layernorm", "layer_norm", "rmsnorm", "rms_norm", "groupnorm", "group_norm", "batchnorm", "batch_norm",
		"bn_fw", "bn_bw", "normalization", "l2norm", "rsqrt", "silu", "gelu", "swiglu", "geglu", "relu", "sigmoid", "swish", "tanh",
		"softplus", "mish", "act_and_mul", "activation"}},
	// Turning logits into tokens: softmax, top-k/top-p, sampling, argmax,
	// penalties.
	{CategorySampling, []string{"sampl", "topk", "top_k", "topp", "top_p", "softmax", "argmax", "multinomial", "gumbel", "penalt"}},
	// Memory-bound kernels that are none of the above: PyTorch's
	// elementwise, reduce and copy kernels, nvFuser's and Inductor's fused
	// ones (see tritonCategory), fills, concatenation, permutes and layout
	// changes, gathers, scatters and embedding lookups (FBGEMM's
	// split_embedding_…), sorts (cub's radix sort), pooling, random
	// numbers and dropout, quantization, losses and optimizer steps.
	{CategoryElementwise, []string{"elementwise", "reduce_kernel", "nvfuser_", "vectoradd", "vector_add", "copy", "fill", "catarray",
		"permut", "transpose", "reformat", "nchwtonhwc", "nhwctonchw", "index", "gather", "scatter", "embedding", "embs_",
		"radixsort", "sort", "pool", "dropout", "distribution", "quant", "cast", "clamp", "where", "cumsum", "scan",
		"loss", "adam", "sgd", "multi_tensor_apply", "computeoffsets", "arange"}},
}

// tritonCategory categorizes the kernels torch.compile's Inductor
// generates, named triton_{poi,red,per,tem}_fused_<the fused aten ops>_<n>:
// templates (tem) are matrix products or attention; pointwise (poi),
// reduction (red) and persistent reduction (per) kernels are
// norm/activation when their fused ops name one, else elementwise — never
// a collective or sampling because an op name says so
// (triton_poi_fused_add_all_reduce_… is the pointwise work around a
// collective that runs as its own kernel).
func tritonCategory(lower string) (KernelCategory, bool) {
	var kind string
	for _, k := range []string{"triton_poi_", "triton_red_", "triton_per_", "triton_tem_"} {
		if strings.HasPrefix(lower, k) {
			kind = k
		}
	}
	if kind == "" {
		return 0, false
	}
	row := func(c KernelCategory) bool {
		for _, r := range kernelPatterns {
			if r.cat != c {
				continue
			}
			for _, s := range r.sub {
				if strings.Contains(lower, s) {
					return true
				}
			}
		}
		return false
	}
	switch {
	case kind == "triton_tem_" && (strings.Contains(lower, "attention") || strings.Contains(lower, "flex")):
		return CategoryAttention, true
	case kind == "triton_tem_":
		return CategoryGEMM, true
	case row(CategoryNormActivation):
		return CategoryNormActivation, true
	}
	return CategoryElementwise, true
}

// Categorize returns the category of a kernel name by the pattern table;
// CategoryOther when no row matches. It never returns CategoryMemcpy or
// CategoryMemset: copies and fills are told by their op kind (CategorizeOp).
func Categorize(name string) KernelCategory {
	lower := strings.ToLower(name)
	if c, ok := tritonCategory(lower); ok {
		return c
	}
	for _, row := range kernelPatterns {
		for _, s := range row.sub {
			if strings.Contains(lower, s) {
				return row.cat
			}
		}
	}
	return CategoryOther
}

// CategorizeOp returns the category of a GPU op: memcpy ops are
// CategoryMemcpy and memset ops CategoryMemset; a kernel is categorized by its full name, or by its short name
// when the full one matches nothing (a short name can be more telling than
// a templated wrapper); whole-graph executions and synchronizations are
// CategoryOther. For many ops use a CategoryCache.
func CategorizeOp(t *ingest.Trace, op *ingest.GPUOp) KernelCategory {
	if c, ok := ingest.OpCategory(op.Kind); ok {
		return c
	}
	c := Categorize(t.Str(op.Name))
	if c == CategoryOther && op.ShortName != 0 && op.ShortName != op.Name {
		c = Categorize(t.Str(op.ShortName))
	}
	return c
}

// CategoryCache categorizes the ops of one trace, matching each distinct
// name once: a run has millions of kernels and a few hundred names.
type CategoryCache struct {
	t *ingest.Trace
	// byName[id] is 1 + the category of kernels whose Name is id (0: not
	// yet seen). Kernels with the same Name and different short names do
	// not exist in practice; the short name only breaks "other" ties.
	byName []uint8
}

// NewCategoryCache returns a cache for the ops of t.
func NewCategoryCache(t *ingest.Trace) *CategoryCache {
	return &CategoryCache{t: t, byName: make([]uint8, t.Strings.Len())}
}

// Of returns CategorizeOp(t, op).
func (c *CategoryCache) Of(op *ingest.GPUOp) KernelCategory {
	if op.Kind != ingest.OpKernel {
		return CategorizeOp(c.t, op)
	}
	id := int(op.Name)
	if id >= len(c.byName) {
		if id >= c.t.Strings.Len() {
			return CategorizeOp(c.t, op)
		}
		c.byName = append(c.byName, make([]uint8, c.t.Strings.Len()-len(c.byName))...)
	}
	if v := c.byName[id]; v != 0 {
		return KernelCategory(v - 1)
	}
	cat := CategorizeOp(c.t, op)
	c.byName[id] = uint8(cat) + 1
	return cat
}
