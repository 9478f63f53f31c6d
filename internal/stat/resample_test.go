package stat

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"
)

func TestMinSamplesForQuantile(t *testing.T) {
	// docs/diff.md: median 6, p95 72, p99 368 at α = 0.05.
	for _, tc := range []struct {
		name string
		q    float64
		want int
	}{{"p50", 0.5, 6}, {"p90", 0.9, 36}, {"p95", 0.95, 72}, {"p99", 0.99, 368}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MinSamplesForQuantile(tc.q, 0.05); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
			// The definition: max(q,1−q)^n ≤ α/2 at n and not at n−1.
			p := math.Max(tc.q, 1-tc.q)
			if math.Pow(p, float64(tc.want)) > 0.025 || math.Pow(p, float64(tc.want-1)) <= 0.025 {
				t.Errorf("%d is not the smallest n with %v^n ≤ 0.025", tc.want, p)
			}
		})
	}
}

func TestEffectiveN(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	n := 20000
	iid := make([]float64, n)
	ar := make([]float64, n)
	prev := 0.0
	for i := range iid {
		iid[i] = rng.NormFloat64()
		prev = 0.5*prev + rng.NormFloat64()
		ar[i] = prev
	}
	if r := EffectiveN(iid) / float64(n); r < 0.9 {
		t.Errorf("independent series: n_eff/n = %.2f, want ≈ 1", r)
	}
	// AR(1) with ρ = 0.5: n_eff/n = (1−ρ)/(1+ρ) = 1/3.
	if r := EffectiveN(ar) / float64(n); math.Abs(r-1.0/3) > 0.05 {
		t.Errorf("AR(1) ρ=0.5: n_eff/n = %.3f, want ≈ 0.333", r)
	}
}

// materialize expands multiplicities into the resample they describe.
func materialize(values []float64, counts []int32) []float64 {
	var out []float64
	for i, c := range counts {
		if math.IsNaN(values[i]) {
			continue
		}
		for range c {
			out = append(out, values[i])
		}
	}
	slices.Sort(out)
	return out
}

// TestResampledStatisticsMatchMaterialized checks the multiplicity walk
// against sorting the resample it stands for.
func TestResampledStatisticsMatchMaterialized(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		block int
		nan   bool
		ties  bool
	}{
		{"iid", 200, 1, false, false},
		{"blocks", 200, 7, false, false},
		{"unknowns", 150, 1, true, false},
		{"ties", 100, 5, false, true},
		{"blocks with unknowns", 120, 9, true, false},
		{"tiny", 3, 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(tc.n)))
			values := make([]float64, tc.n)
			for i := range values {
				values[i] = math.Exp(rng.NormFloat64())
				if tc.ties {
					values[i] = math.Round(values[i])
				}
				if tc.nan && i%7 == 0 {
					values[i] = math.NaN()
				}
			}
			view := NewSortedView(values)
			rs := NewResampler(tc.n, tc.block, 1, "test")
			for range 50 {
				counts := rs.Next()
				var sum int32
				for _, c := range counts {
					sum += c
				}
				if int(sum) != tc.n {
					t.Fatalf("multiplicities sum to %d, want %d", sum, tc.n)
				}
				ref := materialize(values, counts)
				total := view.Total(values, counts)
				if total != len(ref) {
					t.Fatalf("total %d, want %d", total, len(ref))
				}
				for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 1} {
					got, want := view.Quantile(counts, total, q), Quantile(ref, q)
					if !(got == want || math.Abs(got-want) < 1e-12*math.Abs(want)) && !(math.IsNaN(got) && math.IsNaN(want)) {
						t.Fatalf("q=%v: %v, want %v", q, got, want)
					}
				}
				if got, want := ResampledMean(values, counts, total), floats.Sum(ref)/float64(len(ref)); math.Abs(got-want) > 1e-9*math.Abs(want) {
					t.Fatalf("mean %v, want %v", got, want)
				}
				if tc.block > 1 {
					sum, known := PrefixSums(values)
					got, n := BlockMean(rs.Spans(), sum, known)
					if n != total || math.Abs(got-floats.Sum(ref)/float64(len(ref))) > 1e-9*math.Abs(floats.Sum(ref)/float64(len(ref))) {
						t.Fatalf("block mean %v over %d, want %v over %d", got, n, floats.Sum(ref)/float64(len(ref)), total)
					}
				}
			}
		})
	}
}

// TestByUnitMatchesExpandedCounts: a view of tokens read with their
// requests' multiplicities (SortedView.ByUnit) gives the order statistics
// of the view read with one multiplicity per token, bit for bit.
func TestByUnitMatchesExpandedCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	units := 60
	var values []float64
	var unit []int32
	for u := range units {
		for range 1 + rng.IntN(20) {
			values = append(values, math.Round(10*math.Exp(rng.NormFloat64())))
			unit = append(unit, int32(u))
		}
	}
	view := NewSortedView(values)
	byUnit := view.ByUnit(unit)
	expanded := make([]int32, len(values))
	rs := NewResampler(units, 1, 2, "tokens")
	for range 50 {
		counts := rs.Next()
		total := 0
		for j, u := range unit {
			expanded[j] = counts[u]
			total += int(counts[u])
		}
		if total != len(materialize(values, expanded)) {
			t.Fatalf("total %d, want %d", total, len(materialize(values, expanded)))
		}
		for _, q := range []float64{0, 0.01, 0.3, 0.5, 0.9, 0.99, 1} {
			got, want := byUnit.Quantile(counts, total, q), view.Quantile(expanded, total, q)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("q=%v: %v, want %v", q, got, want)
			}
			if ref := Quantile(materialize(values, expanded), q); math.Abs(got-ref) > 1e-12*math.Abs(ref) {
				t.Fatalf("q=%v: %v, the materialized resample's %v", q, got, ref)
			}
		}
	}
}

// TestBlockResamplerKeepsRunsTogether: with blocks every drawn unit arrives
// with its neighbours, so multiplicities change only at block edges.
func TestBlockResamplerKeepsRunsTogether(t *testing.T) {
	n, l := 100, 10
	rs := NewResampler(n, l, 3, "blocks")
	counts := rs.Next()
	changes := 0
	for i := 1; i < n; i++ {
		if counts[i] != counts[i-1] {
			changes++
		}
	}
	// ⌈n/ℓ⌉ blocks have at most 2 edges each.
	if changes > 2*((n+l-1)/l) {
		t.Errorf("%d changes of multiplicity; blocks of %d should give at most %d", changes, l, 2*((n+l-1)/l))
	}
	// Reproducible for a seed and stream, different across streams.
	a := slices.Clone(NewResampler(n, 1, 9, "x").Next())
	b := slices.Clone(NewResampler(n, 1, 9, "x").Next())
	c := slices.Clone(NewResampler(n, 1, 9, "y").Next())
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Error("resampler is not reproducible per (seed, stream)")
	}
}

// TestSortedViewMatchesIndexSort checks NewSortedView's radix sort of keyed
// pairs against sorting the indexes through the values (indexSortedView,
// what it did for every series before): the same order, value for value
// and index for index, on random series with ties, signed zeros, infinities
// and NaN, of odd and even lengths, short (the index sort itself) and of
// 500–2000 values (the radix sort; some with every value alike, some of
// latencies with few ties).
func TestSortedViewMatchesIndexSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	special := []float64{math.Inf(-1), math.Inf(1), math.Copysign(0, -1), 0, math.NaN(), -1e-300, 1e-300, -math.MaxFloat64}
	for trial := range 2000 {
		n := rng.IntN(80)
		if trial%8 == 0 {
			n = 500 + rng.IntN(1500)
		}
		values := make([]float64, n)
		levels := 1 + rng.IntN(30)
		if trial%24 == 0 {
			levels = 1 << 30
		}
		for i := range values {
			if rng.IntN(6) == 0 {
				values[i] = special[rng.IntN(len(special))]
				continue
			}
			values[i] = float64(rng.IntN(levels)-levels/2) * 0.125
		}
		n = 0
		for _, v := range values {
			if !math.IsNaN(v) {
				n++
			}
		}
		want := indexSortedView(values, n).order
		s := NewSortedView(values)
		if !slices.Equal(s.order, want) {
			t.Fatalf("trial %d, values %v: order %v, want %v", trial, values, s.order, want)
		}
		for i, u := range want {
			if math.Float64bits(s.vals[i]) != math.Float64bits(values[u]) {
				t.Fatalf("trial %d: vals[%d] = %v, want %v", trial, i, s.vals[i], values[u])
			}
		}
	}
}

// TestQuantileBatchMatchesQuantile: four resamples' quantiles read
// together are Quantile's of each, bit for bit: of a series with unknowns
// and ties (equal sizes), of tokens read through their units (sizes that
// differ a replicate to the next, of both parities), of block resamples,
// of a series short enough that a resample draws none of its known
// values, and with totals that are not the resamples' sizes.
func TestQuantileBatchMatchesQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for trial := range 40 {
		n := []int{3, 40, 517, 2000}[trial%4]
		block := 1 + trial/4%3*4
		values := make([]float64, n)
		for i := range values {
			values[i] = math.Round(100 * math.Exp(rng.NormFloat64()))
			if rng.IntN(8) == 0 || n == 3 && i > 0 {
				values[i] = math.NaN()
			}
		}
		view := NewSortedView(values)
		var tok []float64
		var unit []int32
		for u := range n {
			for range rng.IntN(6) {
				tok = append(tok, math.Round(10*math.Exp(rng.NormFloat64())))
				unit = append(unit, int32(u))
			}
		}
		byUnit := NewSortedView(tok).ByUnit(unit)
		rs := NewResampler(n, block, uint64(trial), "batch")
		for range 25 {
			var counts [4][]int32
			var totals, tokTotals [4]int
			for r := range counts {
				counts[r] = slices.Clone(rs.Next())
				totals[r] = view.Total(values, counts[r])
				for _, u := range unit {
					tokTotals[r] += int(counts[r][u])
				}
			}
			// Sizes that are not the resamples' (compare's token series
			// with unknown values counts their units' unknowns too).
			unsized := tokTotals
			for r := range unsized {
				unsized[r] += r
			}
			for _, q := range []float64{0, 0.01, 0.3, 0.5, 0.7, 0.9, 0.99, 1} {
				for _, tc := range []struct {
					v      SortedView
					totals [4]int
					sized  bool
				}{{view, totals, true}, {byUnit, tokTotals, true}, {byUnit, unsized, false}} {
					got := tc.v.QuantileBatch(&counts, &tc.totals, q, tc.sized)
					for r := range got {
						if want := tc.v.Quantile(counts[r], tc.totals[r], q); math.Float64bits(got[r]) != math.Float64bits(want) {
							t.Fatalf("trial %d (n=%d, block %d) q=%v resample %d of totals %v: %v, want %v", trial, n, block, q, r, tc.totals, got[r], want)
						}
					}
				}
			}
		}
	}
}
