package synth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// ParseSlowdown reads kernel-category slowdowns, "attention=1.6" or
// "gemm=1.3,attention=1.6": each category (its key or name, as
// ingest.KernelCategory spells them) and the factor its kernels' durations
// are multiplied by (> 0; 1.6 is 60% slower, 0.8 20% faster).
func ParseSlowdown(s string) (map[ingest.KernelCategory]float64, error) {
	out := map[ingest.KernelCategory]float64{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("slowdown %q: want CATEGORY=FACTOR, such as attention=1.6", part)
		}
		cat, ok := categoryNamed(strings.TrimSpace(name))
		if !ok {
			var keys []string
			for _, c := range ingest.KernelCategories() {
				keys = append(keys, c.Info().Key)
			}
			return nil, fmt.Errorf("slowdown %q: unknown kernel category %q (want one of %s)", part, name, strings.Join(keys, ", "))
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || !(f > 0) || f > 100 {
			return nil, fmt.Errorf("slowdown %q: factor %q is not a number in (0, 100]", part, val)
		}
		out[cat] = f
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("slowdown %q: no CATEGORY=FACTOR", s)
	}
	return out, nil
}

func categoryNamed(s string) (ingest.KernelCategory, bool) {
	for _, c := range ingest.KernelCategories() {
		if in := c.Info(); strings.EqualFold(s, in.Key) || strings.EqualFold(s, in.Name) {
			return c, true
		}
	}
	return 0, false
}

// Slow multiplies the kernels of the given categories on every model by
// their factors (Model.CategorySpeed): the injected regression, and its
// ground truth, of a candidate run.
func (c *Config) Slow(by map[ingest.KernelCategory]float64) {
	for i := range c.Models {
		m := &c.Models[i]
		if m.CategorySpeed == nil {
			m.CategorySpeed = map[ingest.KernelCategory]float64{}
		}
		for cat, f := range by {
			if g, ok := m.CategorySpeed[cat]; ok {
				f *= g
			}
			m.CategorySpeed[cat] = f
		}
	}
}
