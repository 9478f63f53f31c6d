package stat

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkHodgesLehmann measures the estimate and Moses interval by
// selection in the implicit difference matrix; BenchmarkHodgesLehmannAllPairs
// is the reference that forms and sorts all n² differences. Compare the two
// at the same n (ns/op and B/op) for the speed-up and the memory saved.
func BenchmarkHodgesLehmann(b *testing.B) {
	for _, n := range []int{500, 2000, 8000} {
		xs, ys := benchSamples(n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				HodgesLehmann(xs, ys, 0.05)
			}
		})
	}
}

func BenchmarkHodgesLehmannAllPairs(b *testing.B) {
	for _, n := range []int{500, 2000, 8000} {
		xs, ys := benchSamples(n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d := make([]float64, 0, n*n)
				for _, x := range xs {
					for _, y := range ys {
						d = append(d, y-x)
					}
				}
				slices.Sort(d)
				k := mosesK(xs, ys, 0.05)
				m := len(d)
				_ = (d[m/2-1] + d[m/2]) / 2
				_, _ = d[k-1], d[m-int(k)]
			}
		})
	}
}

func benchSamples(n int) ([]float64, []float64) {
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	return randomSample(rng, n, 0, false), randomSample(rng, n, 0.1, false)
}

// BenchmarkSortedViewQuantile measures one bootstrap replicate's order
// statistics as compare's bootstrap reads them (p50, p90, p99): of a
// request series (2000 values) and of a token series read through its
// requests' multiplicities (ByUnit: 2000 requests of 50 tokens each);
// "/4" four replicates' one at a time and "/batch4" the same four by
// QuantileBatch.
func BenchmarkSortedViewQuantile(b *testing.B) {
	const units, per = 2000, 50
	rng := rand.New(rand.NewPCG(3, 4))
	req := make([]float64, units)
	for i := range req {
		req[i] = rng.ExpFloat64()
	}
	tok := make([]float64, 0, units*per)
	unit := make([]int32, 0, units*per)
	for u := range units {
		for range per {
			tok = append(tok, rng.ExpFloat64())
			unit = append(unit, int32(u))
		}
	}
	for _, tc := range []struct {
		name  string
		view  SortedView
		total func(counts []int32) int
	}{
		{"requests", NewSortedView(req), func([]int32) int { return units }},
		{"tokens", NewSortedView(tok).ByUnit(unit), func([]int32) int { return units * per }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rs := NewResampler(units, 1, 1, "bench")
			counts := rs.Next()
			total := tc.total(counts)
			for b.Loop() {
				for _, q := range []float64{0.5, 0.9, 0.99} {
					tc.view.Quantile(counts, total, q)
				}
			}
		})
		// Four replicates a loop, read one at a time and as a batch.
		rs := NewResampler(units, 1, 1, "bench")
		var counts [4][]int32
		var totals [4]int
		for r := range counts {
			counts[r] = slices.Clone(rs.Next())
			totals[r] = tc.total(counts[r])
		}
		b.Run(tc.name+"/4", func(b *testing.B) {
			for b.Loop() {
				for _, q := range []float64{0.5, 0.9, 0.99} {
					for r := range counts {
						tc.view.Quantile(counts[r], totals[r], q)
					}
				}
			}
		})
		b.Run(tc.name+"/batch4", func(b *testing.B) {
			for b.Loop() {
				for _, q := range []float64{0.5, 0.9, 0.99} {
					tc.view.QuantileBatch(&counts, &totals, q, true)
				}
			}
		})
	}
}
