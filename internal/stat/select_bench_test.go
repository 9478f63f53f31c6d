package stat

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkQuantiles takes a distribution's quantiles (attribution's
// distribution: the median, p90, p95, p99 and the maximum) of 44,544
// whole-nanosecond latencies, a tenth of them zero, as the 30 MiB OTLP
// dump of docs/otlp.md has.
func BenchmarkQuantiles(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	src := make([]float64, 44544)
	for i := range src {
		if rng.IntN(10) > 0 {
			src[i] = math.Round(math.Exp(rng.NormFloat64()*1.2 + 18))
		}
	}
	xs := make([]float64, len(src))
	for b.Loop() {
		copy(xs, src)
		Quantiles(xs, 0.5, 0.9, 0.95, 0.99, 1)
	}
}
