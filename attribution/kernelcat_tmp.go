package attribution

// TEMPORARY: replaced by the nsys branch's kernelcat.go on merge.

import (
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

type KernelCategory uint8

const (
	CategoryGEMM KernelCategory = iota
	CategoryAttention
	CategoryCommunication
	CategoryNormActivation
	CategorySampling
	CategoryMemcpy
	CategoryOther
)

type CategoryCache struct {
	t     *ingest.Trace
	cache map[ingest.StrID]KernelCategory
}

func NewCategoryCache(t *ingest.Trace) *CategoryCache {
	return &CategoryCache{t: t, cache: map[ingest.StrID]KernelCategory{}}
}

func (c *CategoryCache) Of(o *ingest.GPUOp) KernelCategory {
	if o.Kind == ingest.OpMemcpy || o.Kind == ingest.OpMemset {
		return CategoryMemcpy
	}
	if k, ok := c.cache[o.Name]; ok {
		return k
	}
	n := strings.ToLower(c.t.Str(o.Name))
	k := CategoryOther
	switch {
	case strings.Contains(n, "nccl"):
		k = CategoryCommunication
	case strings.Contains(n, "flash") || strings.Contains(n, "attention"):
		k = CategoryAttention
	case strings.Contains(n, "gemm") || strings.Contains(n, "nvjet"):
		k = CategoryGEMM
	case strings.Contains(n, "norm") || strings.Contains(n, "silu"):
		k = CategoryNormActivation
	case strings.Contains(n, "softmax") || strings.Contains(n, "topk"):
		k = CategorySampling
	}
	c.cache[o.Name] = k
	return k
}
