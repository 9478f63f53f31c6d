package causal

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// benchOps returns n kernels of the given number of tenants (pids 1..),
// sorted by start as Trace.Validate leaves them: each tenant runs kernels of
// 20–200 µs on two streams with gaps, over about n/tenants·150 µs.
func benchOps(n, tenants int) []ingest.GPUOp {
	rng := rand.New(rand.NewPCG(1, 1))
	ops := make([]ingest.GPUOp, 0, n)
	clock := make([]int64, tenants*2)
	for i := 0; i < n; i++ {
		s := rng.IntN(len(clock))
		start := clock[s] + rng.Int64N(100_000)
		end := start + 20_000 + rng.Int64N(180_000)
		clock[s] = end
		ops = append(ops, ingest.GPUOp{Start: start, End: end, Pid: uint32(s/2 + 1), Stream: uint32(s % 2), Kind: ingest.OpKernel})
	}
	slices.SortFunc(ops, func(a, b ingest.GPUOp) int { return int(a.Start - b.Start) })
	return ops
}

// BenchmarkBusyLoad times the busy-load sweep over 1 M kernels of 8 tenants,
// sorted and shuffled, against a reference run in the same process: sorting
// the same kernels' start times from a shuffled order (what any interval
// join over unsorted input must at least do). bench/causal.sh prints the
// ratios.
func BenchmarkBusyLoad(b *testing.B) {
	ops := benchOps(1_000_000, 8)
	byPid := map[uint32]string{}
	for p := uint32(1); p <= 8; p++ {
		byPid[p] = string(rune('A' + p - 1))
	}
	tm := NewTenantMap(byPid)
	end := int64(0)
	for i := range ops {
		end = max(end, ops[i].End)
	}
	grid := NewGrid(0, end, 1e9)
	shuffled := slices.Clone(ops)
	rand.New(rand.NewPCG(2, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b.Run("reference-sort-starts", func(b *testing.B) {
		starts := make([]int64, len(ops))
		for b.Loop() {
			for i := range shuffled {
				starts[i] = shuffled[i].Start
			}
			slices.Sort(starts)
		}
	})
	b.Run("busy-load-sorted", func(b *testing.B) {
		for b.Loop() {
			BusyLoad(ops, tm, grid)
		}
	})
	b.Run("busy-load-shuffled", func(b *testing.B) {
		for b.Loop() {
			BusyLoad(shuffled, tm, grid)
		}
	})
}

// BenchmarkAnalyze times the whole analysis of one simulated run: four
// tenants, 15 minutes, about 5,400 requests, both metrics, both views.
func BenchmarkAnalyze(b *testing.B) {
	reqs, l, tm := prepared(defaultSim(1))
	b.Run("request-level", func(b *testing.B) {
		for b.Loop() {
			if _, err := Analyze(Input{Requests: reqs, Load: l, Mapping: tm}, Options{NoLagModel: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("with-lag-model", func(b *testing.B) {
		for b.Loop() {
			if _, err := Analyze(Input{Requests: reqs, Load: l, Mapping: tm}, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
