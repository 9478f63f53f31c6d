package ingest

import "strconv"

// KernelCategory is what a GPU op does, at the level a latency breakdown
// needs. It is shared vocabulary: attribution categorizes ops into it, the
// token buckets gpu.<key> and the report's gpu.kernel_categories[] are
// derived from it, compare's metrics and the --tokens columns follow, and
// synth's ground truth uses it. Adding a category is one row in
// kernelCategories (and its constant); everything else is derived.
type KernelCategory uint8

// The kernel categories, in report order.
const (
	CategoryGEMM KernelCategory = iota
	CategoryAttention
	CategoryCommunication
	CategoryNormActivation
	CategorySampling
	// CategoryElementwise is memory-bound work that is none of the above:
	// pointwise and reduction kernels (fused by torch.compile or nvFuser
	// too), fills and copies done by kernels, gathers, scatters and
	// embedding lookups, sorts, quantization, optimizer steps.
	CategoryElementwise
	CategoryMemcpy
	CategoryMemset
	CategoryOther
	// NumKernelCategories counts the categories.
	NumKernelCategories = int(CategoryOther) + 1
)

// CategoryInfo is one row of the category table.
type CategoryInfo struct {
	// Name is the category as the JSON report spells it (gpu.kernel_categories[].name).
	Name string
	// Key names the category inside other names: the token bucket
	// "gpu.<Key>", the --tokens column "gpu_<Key>_ns", the diff metric
	// "tokens.gpu.<Key>".
	Key string
	// Short is the column heading in narrow terminal tables.
	Short string
	// Overlap decides which op owns an instant when ops of several
	// categories overlap on different streams; lower wins. Compute first,
	// so a collective or a copy hidden behind a GEMM costs nothing.
	Overlap int
	// Since is the version of the --tokens contract that added the
	// category's column: 1 for the first set; columns added later go after
	// the first set's, in Since order, so that readers of older files keep
	// their column positions.
	Since int
}

var kernelCategories = [NumKernelCategories]CategoryInfo{
	CategoryGEMM:           {Name: "gemm", Key: "gemm", Short: "gemm", Overlap: 2, Since: 1},
	CategoryAttention:      {Name: "attention", Key: "attention", Short: "attn", Overlap: 1, Since: 1},
	CategoryCommunication:  {Name: "communication", Key: "communication", Short: "comm", Overlap: 9, Since: 1},
	CategoryNormActivation: {Name: "norm/activation", Key: "norm_activation", Short: "norm/act", Overlap: 3, Since: 1},
	CategorySampling:       {Name: "sampling", Key: "sampling", Short: "sampling", Overlap: 4, Since: 1},
	CategoryElementwise:    {Name: "elementwise", Key: "elementwise", Short: "elemwise", Overlap: 5, Since: 4},
	CategoryMemcpy:         {Name: "memcpy", Key: "memcpy", Short: "memcpy", Overlap: 7, Since: 1},
	CategoryMemset:         {Name: "memset", Key: "memset", Short: "memset", Overlap: 8, Since: 3},
	CategoryOther:          {Name: "other", Key: "other", Short: "other", Overlap: 6, Since: 1},
}

// Info returns the category's row of the table.
func (c KernelCategory) Info() CategoryInfo {
	if int(c) < NumKernelCategories {
		return kernelCategories[c]
	}
	return CategoryInfo{Name: "category(" + strconv.Itoa(int(c)) + ")", Key: "category" + strconv.Itoa(int(c))}
}

// String is the category's name as the JSON report spells it.
func (c KernelCategory) String() string { return c.Info().Name }

// KernelCategories returns every category, in report order.
func KernelCategories() []KernelCategory {
	out := make([]KernelCategory, NumKernelCategories)
	for i := range out {
		out[i] = KernelCategory(i)
	}
	return out
}

// OpCategory is the category an op's kind decides by itself: copies and
// fills are told by their kind, not their name. ok is false for kernels,
// whose category comes from their name.
func OpCategory(k GPUOpKind) (KernelCategory, bool) {
	switch k {
	case OpMemcpy:
		return CategoryMemcpy, true
	case OpMemset:
		return CategoryMemset, true
	case OpKernel:
		return 0, false
	}
	return CategoryOther, true
}
