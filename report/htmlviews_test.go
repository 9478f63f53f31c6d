package report

import (
	"math"
	"slices"
	"testing"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
)

// TestCDFBounded: a CDF of many values has at most cdfPoints points, from
// the minimum to the maximum, with P rising to 1; a small sample keeps every
// value.
func TestCDFBounded(t *testing.T) {
	xs := make([]float64, 100_000)
	for i := range xs {
		xs[i] = float64((i * 7919) % 100_000)
	}
	c := cdf("all", xs)
	if len(c.X) > cdfPoints || c.N != len(xs) {
		t.Fatalf("%d points for n=%d", len(c.X), c.N)
	}
	if c.X[0] != 0 || c.X[len(c.X)-1] != 99_999 || c.P[len(c.P)-1] != 1 {
		t.Errorf("ends %g…%g, last P %g", c.X[0], c.X[len(c.X)-1], c.P[len(c.P)-1])
	}
	if !slices.IsSorted(c.X) || !slices.IsSorted(c.P) {
		t.Error("CDF not monotone")
	}
	if med := c.X[len(c.X)/2]; math.Abs(med-50_000) > 500 {
		t.Errorf("median %g, want about 50000", med)
	}
	small := cdf("few", []float64{3, 1, 2})
	if !slices.Equal(small.X, []float64{1, 2, 3}) || !slices.Equal(small.P, []float64{1.0 / 3, 2.0 / 3, 1}) {
		t.Errorf("small CDF %v %v", small.X, small.P)
	}
}

// TestGPUTimelineUnion: overlapping ops on two streams count once, a
// synchronization (a CPU-side wait) not at all; each bin's busy share is the
// union's share of the bin.
func TestGPUTimelineUnion(t *testing.T) {
	tr := ingest.New()
	ops := [][2]int64{{0, 600}, {300, 1200}, {1800, 2400}} // union: 0–1200, 1800–2400
	for i, o := range ops {
		tr.GPUOps = append(tr.GPUOps, ingest.GPUOp{Start: o[0], End: o[1], Stream: uint32(i % 2), Device: 0})
	}
	tr.GPUOps = append(tr.GPUOps, ingest.GPUOp{Start: 1300, End: 1700, Device: 0, Kind: ingest.OpSync})
	g := gpuTimeline(tr, &attribution.GPU{Devices: []attribution.GPUDevice{{Device: 0, StartNs: 0, EndNs: 2400}}})
	if g == nil || len(g.Devices) != 1 {
		t.Fatal("no timeline")
	}
	busy := g.Devices[0].Busy
	var sum float64
	for _, b := range busy {
		if b < 0 || b > 1+1e-9 {
			t.Fatalf("busy share %g outside [0, 1]", b)
		}
		sum += b * float64(g.BinNs)
	}
	if math.Abs(sum-1800) > 1e-6 {
		t.Errorf("busy time %g ns, want the union's 1800", sum)
	}
	if busy[0] != 1 || busy[len(busy)-1] != 1 {
		t.Errorf("first and last bins %g, %g; want busy", busy[0], busy[len(busy)-1])
	}
}

func TestTicks(t *testing.T) {
	lin := axisScale{lo: 0, hi: 1}.ticks()
	if len(lin) != 6 || lin[0] != 0 || math.Abs(lin[5]-1) > 1e-9 || math.Abs(lin[1]-0.2) > 1e-9 {
		t.Errorf("linear ticks %v", lin)
	}
	log := axisScale{lo: 3, hi: 20_000, log: true}.ticks()
	if !slices.Equal(log, []float64{10, 100, 1000, 10000}) {
		t.Errorf("log ticks %v, want powers of ten over many decades", log)
	}
	for v, want := range map[float64]string{0: "0", 2500: "2.5k", 1e6: "1M", 0.25: "0.25", 12.5: "12.5"} {
		if got := tickLabel(v); got != want {
			t.Errorf("tickLabel(%g) = %q, want %q", v, got, want)
		}
	}
}

func TestTextClassContrast(t *testing.T) {
	for fill, want := range map[string]string{"#ffffff": "ontext-dark", "#0072B2": "ontext-light", "#F0E442": "ontext-dark", "#542788": "ontext-light", "#d9d9d9": "ontext-dark"} {
		if got := textClass(fill); got != want {
			t.Errorf("textClass(%s) = %s, want %s", fill, got, want)
		}
	}
}

// TestOverTimeUpperQuantile: the over-time chart's upper line is a p99 only
// where bins hold the 100 requests a p99 needs to be more than the maximum;
// with ~20 a bin it is a p90, and a bin with fewer than 10 has none.
func TestOverTimeUpperQuantile(t *testing.T) {
	rows := func(perBin []int) []RequestRow {
		var out []RequestRow
		for b, n := range perBin {
			for i := range n {
				out = append(out, RequestRow{OffsetMs: 1000*float64(b) + 999*float64(i)/float64(n), TTFT: float64(i), Queue: 1})
			}
		}
		return out
	}
	small := overTime(rows([]int{20, 20, 5, 20, 20, 20, 20, 20, 20, 20, 20, 20}))
	if small.HighQ != 0.9 {
		t.Errorf("~20 requests a bin: upper quantile %g, want 0.9", small.HighQ)
	}
	nan := 0
	for b, v := range small.TTFTHigh {
		if math.IsNaN(v) {
			nan++
			if small.Count[b] >= 10 {
				t.Errorf("bin %d holds %d requests but has no p90", b, small.Count[b])
			}
		} else if small.Count[b] < 10 {
			t.Errorf("bin %d of %d requests has a p90 (%g)", b, small.Count[b], v)
		}
	}
	if nan == 0 {
		t.Error("no bin left without an upper quantile, though one holds 5 requests")
	}
	big := overTime(rows(slices.Repeat([]int{150}, timeBins)))
	if big.HighQ != 0.99 {
		t.Errorf("150 requests a bin: upper quantile %g, want 0.99", big.HighQ)
	}
}
