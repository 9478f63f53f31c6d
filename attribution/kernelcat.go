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
	CategoryMemcpy         = ingest.CategoryMemcpy
	CategoryMemset         = ingest.CategoryMemset
	CategoryOther          = ingest.CategoryOther
	NumKernelCategories    = ingest.NumKernelCategories
)

// kernelPatterns is the name-pattern table: a kernel belongs to the first
// row with a substring of its lower-cased name. Order matters, and each row
// says why it sits where it does. The names in kernelcat_test.go — from the
// real nsys exports in the shared test data and from vLLM, SGLang,
// TensorRT-LLM, FlashAttention, FlashInfer, cuBLAS and NCCL profiles — are
// the specification.
var kernelPatterns = []struct {
	cat KernelCategory
	sub []string
}{
	// Collectives first: an all-reduce fused with a norm (TensorRT-LLM's
	// allreduce_fusion, vLLM's fused all-reduce + RMSNorm) is communication
	// time on the critical path.
	{CategoryCommunication, []string{"nccl", "allreduce", "all_reduce", "allgather", "all_gather", "reducescatter", "reduce_scatter",
		"alltoall", "all_to_all", "cross_device_reduce", "mscclpp", "nvshmem", "deep_ep"}},
	// Attention before GEMM: FlashAttention's demangled names carry
	// cutlass types (cutlass::bfloat16_t, cutlass::device_kernel<flash::…>).
	// KV-cache writes and rotary embeddings are part of the attention block.
	// "flash::" and not "flash": FlashInfer's norm and sampling kernels live
	// in flashinfer::norm and flashinfer::sampling.
	{CategoryAttention, []string{"attention", "attn", "flash_fwd", "flash_bwd", "flash::", "flashattn", "flash_mla", "fmha", "mha",
		"xformers", "xqa", "prefillwith", "decodewith", "splitkv", "pagedkv", "paged_kv", "kvcache", "kv_cache",
		"reshape_and_cache", "concat_and_cache", "rotary", "_rope", "rope_", "_mla", "mla_"}},
	// Dense and grouped matrix products, whatever the library: cuBLAS
	// (…gemm…, gemv, splitKreduce), cuBLASLt's nvjet, CUTLASS, DeepGEMM,
	// Marlin, Triton matmuls, implicit-GEMM convolutions (sm80_xmma_fprop_
	// implicit_gemm). "xmma" alone would take sm50_xmma_pooling.
	{CategoryGEMM, []string{"gemm", "gemv", "cublas", "cutlass", "nvjet", "matmul", "bmm", "_mm_", "splitkreduce", "dot_kernel",
		"fused_moe_kernel", "marlin", "tensorop", "wgmma"}},
	// MoE routing (gating softmax, top-k of experts, token sorting) is not
	// token sampling, though it says "topk" and "softmax".
	{CategoryOther, []string{"moe_align", "topkgating", "moe_sum", "grouped_topk", "moe_fused_gate", "moe_permute", "moe_unpermute", "expert"}},
	// Normalization and activation, including torch.compile's fused RMSNorm
	// (triton_red_fused_…_mean_…_rsqrt).
	{CategoryNormActivation, []string{"layernorm", "layer_norm", "rmsnorm", "rms_norm", "groupnorm", "group_norm", "batchnorm", "batch_norm",
		"l2norm", "rsqrt", "silu", "gelu", "swiglu", "geglu", "relu", "sigmoid", "swish", "tanh", "softplus", "mish",
		"act_and_mul", "activation"}},
	// Turning logits into tokens: softmax, top-k/top-p, sampling, argmax,
	// penalties.
	{CategorySampling, []string{"sampl", "topk", "top_k", "topp", "top_p", "softmax", "argmax", "multinomial", "gumbel", "penalt"}},
}

// Categorize returns the category of a kernel name by the pattern table;
// CategoryOther when no row matches. It never returns CategoryMemcpy or
// CategoryMemset: copies and fills are told by their op kind (CategorizeOp).
func Categorize(name string) KernelCategory {
	lower := strings.ToLower(name)
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
