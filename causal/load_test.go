package causal

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

func TestGrid(t *testing.T) {
	tests := []struct {
		name              string
		start, end, width int64
		want              Grid
		bins              map[int64]int // time → bin
	}{
		{"aligned", 0, 3e9, 1e9, Grid{0, 1e9, 4}, map[int64]int{0: 0, 999_999_999: 0, 1e9: 1, 3e9: 3}},
		{"unaligned start", 1.5e9, 2.2e9, 1e9, Grid{1e9, 1e9, 2}, map[int64]int{1e9: 0, 2.2e9: 1, 0: -1}},
		{"negative times floor", -2.5e9, -0.5e9, 1e9, Grid{-3e9, 1e9, 3}, map[int64]int{-3e9: 0, -1: 2, -2.5e9: 0}},
		{"default width", 0, 0, 0, Grid{0, DefaultBinWidth, 1}, nil},
		{"end before start", 5e9, 1e9, 1e9, Grid{5e9, 1e9, 1}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGrid(tc.start, tc.end, tc.width)
			if g != tc.want {
				t.Fatalf("NewGrid = %+v, want %+v", g, tc.want)
			}
			for at, bin := range tc.bins {
				if got := g.Bin(at); got != bin {
					t.Errorf("Bin(%d) = %d, want %d", at, got, bin)
				}
			}
		})
	}
}

// The difference-array accumulator must give the same bin averages as
// intersecting every interval with every bin.
func TestAccumulatorMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	g := Grid{Origin: -5e8, Width: 3e8, N: 40}
	acc := newAccumulator(g)
	want := make([]float64, g.N)
	for i := 0; i < 500; i++ {
		t0 := g.Origin - 1e9 + rng.Int64N(g.End()-g.Origin+2e9)
		t1 := t0 + rng.Int64N(4e9)
		rate := rng.Float64()*10 - 2
		acc.add(t0, t1, rate)
		for b := 0; b < g.N; b++ {
			lo, hi := max(t0, g.Start(b)), min(t1, g.Start(b+1))
			if hi > lo {
				want[b] += rate * float64(hi-lo) / float64(g.Width)
			}
		}
	}
	got := make([]float64, g.N)
	acc.into(got)
	for b := range got {
		if math.Abs(got[b]-want[b]) > 1e-9*math.Max(1, math.Abs(want[b])) {
			t.Errorf("bin %d = %.12g, want %.12g", b, got[b], want[b])
		}
	}
}

func opsTrace(ops ...ingest.GPUOp) []ingest.GPUOp { return ops }

func kernel(pid uint32, stream uint32, start, end int64) ingest.GPUOp {
	return ingest.GPUOp{Start: start, End: end, Pid: pid, Stream: stream, Device: 0, Kind: ingest.OpKernel}
}

func TestBusyLoad(t *testing.T) {
	tm := NewTenantMap(map[uint32]string{1: "A", 2: "B", 3: "A"})
	g := Grid{Origin: 0, Width: 1e9, N: 3}
	tests := []struct {
		name  string
		ops   []ingest.GPUOp
		wantA []float64
		wantB []float64
		note  string
	}{
		{"one kernel inside a bin", opsTrace(kernel(1, 1, 0.2e9, 0.5e9)), []float64{0.3, 0, 0}, []float64{0, 0, 0}, ""},
		{"kernel across bins", opsTrace(kernel(1, 1, 0.5e9, 2.25e9)), []float64{0.5, 1, 0.25}, []float64{0, 0, 0}, ""},
		{"overlapping streams count once", opsTrace(kernel(1, 1, 0, 0.6e9), kernel(1, 2, 0.4e9, 0.8e9)), []float64{0.8, 0, 0}, []float64{0, 0, 0}, ""},
		{"two processes of one tenant merge", opsTrace(kernel(1, 1, 0, 0.5e9), kernel(3, 1, 0.25e9, 0.75e9)), []float64{0.75, 0, 0}, []float64{0, 0, 0}, ""},
		{"contained kernel", opsTrace(kernel(1, 1, 0, 0.9e9), kernel(1, 2, 0.1e9, 0.2e9)), []float64{0.9, 0, 0}, []float64{0, 0, 0}, ""},
		{"tenants apart", opsTrace(kernel(1, 1, 0, 0.5e9), kernel(2, 1, 0, 0.5e9)), []float64{0.5, 0, 0}, []float64{0.5, 0, 0}, ""},
		{"unsorted input", opsTrace(kernel(1, 1, 1.5e9, 1.7e9), kernel(1, 1, 0.1e9, 0.2e9), kernel(1, 2, 1.6e9, 1.9e9)), []float64{0.1, 0.4, 0}, []float64{0, 0, 0}, ""},
		{"memcpy is not a kernel", opsTrace(ingest.GPUOp{Start: 0, End: 1e9, Pid: 1, Kind: ingest.OpMemcpy}), []float64{0, 0, 0}, []float64{0, 0, 0}, ""},
		{"unmapped pid noted", opsTrace(kernel(9, 1, 0, 1e9), kernel(1, 1, 0, 0.1e9)), []float64{0.1, 0, 0}, []float64{0, 0, 0}, "1 kernels of 1 processes with no tenant"},
		{"clipped to the grid", opsTrace(kernel(2, 1, -1e9, 0.5e9), kernel(2, 1, 2.5e9, 9e9)), []float64{0, 0, 0}, []float64{0.5, 0, 0.5}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := BusyLoad(tc.ops, tm, g)
			if l.Kind != LoadGPUBusy || len(l.Tenants) != 2 {
				t.Fatalf("kind %v tenants %v", l.Kind, l.Tenants)
			}
			checkSeries(t, "A", l.Series("A"), tc.wantA)
			checkSeries(t, "B", l.Series("B"), tc.wantB)
			notes := strings.Join(l.Notes, "; ")
			if (tc.note == "") != (notes == "") || !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
		})
	}
}

func checkSeries(t *testing.T, name string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d bins, want %d", name, len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("%s: bin %d = %.12g, want %.12g", name, i, got[i], want[i])
		}
	}
}

// Exposure with prefix integrals must equal integrating the step function
// directly, partial bins and windows past the grid included.
func TestExposureMatchesDirectIntegration(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := Grid{Origin: 1e9, Width: 250e6, N: 50}
	l := newLoad(LoadTokensInFlight, g, []string{"A"})
	for i := range l.Values[0] {
		l.Values[0][i] = rng.Float64() * 100
	}
	l.Prepare()
	direct := func(t0, t1 int64) float64 {
		sum := 0.0
		for b := 0; b < g.N; b++ {
			lo, hi := max(t0, g.Start(b)), min(t1, g.Start(b+1))
			if hi > lo {
				sum += l.Values[0][b] * float64(hi-lo)
			}
		}
		return sum / float64(t1-t0)
	}
	for i := 0; i < 1000; i++ {
		t0 := g.Origin - 1e9 + rng.Int64N(g.End()-g.Origin+2e9)
		t1 := t0 + 1 + rng.Int64N(5e9)
		if got, want := l.Exposure(0, t0, t1), direct(t0, t1); math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Fatalf("Exposure(%d, %d) = %.12g, want %.12g", t0, t1, got, want)
		}
	}
	if got := l.Exposure(0, g.Start(7)+5, g.Start(7)+5); got != l.Values[0][7] {
		t.Errorf("zero-length window reads %v, want bin value %v", got, l.Values[0][7])
	}
	if got := l.Exposure(0, -5e9, -5e9); got != 0 {
		t.Errorf("zero-length window before the grid reads %v, want 0", got)
	}
}

// exposuresInto, every tenant's exposure of a window at once, is Exposure
// bit for bit: windows before, across, inside and after the grid, ending on
// bin edges, and of zero length inside and outside it.
func TestExposuresIntoMatchesExposure(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g := Grid{Origin: 1e9, Width: 250e6, N: 50}
	l := newLoad(LoadTokensInFlight, g, []string{"A", "B", "C"})
	for k := range l.Values {
		for i := range l.Values[k] {
			l.Values[k][i] = rng.Float64() * 100
		}
	}
	l.Prepare()
	var rows []obs
	for range 2000 {
		t0 := g.Origin - 1e9 + rng.Int64N(g.End()-g.Origin+2e9)
		rows = append(rows, obs{start: t0, end: t0 + rng.Int64N(5e9)})
	}
	rows = append(rows, obs{start: g.Start(3), end: g.Start(9)}, obs{start: g.Origin, end: g.End()},
		obs{start: g.Start(7) + 5, end: g.Start(7) + 5}, obs{start: -5e9, end: -5e9}, obs{start: g.End(), end: g.End() + 1})
	ks := []int{2, 0}
	xs := [][]float64{make([]float64, len(rows)), make([]float64, len(rows))}
	l.exposuresInto(ks, rows, xs, nil)
	for j, k := range ks {
		for r, o := range rows {
			if got, want := xs[j][r], l.Exposure(k, o.start, o.end); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("tenant %d, window [%d, %d]: exposuresInto %v, Exposure %v", k, o.start, o.end, got, want)
			}
		}
	}
	// In time order, where each end mostly falls in the bin of the row
	// before's (exposuresInto's placer keeps it).
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b obs) int { return cmp.Compare(a.start, b.start) })
	l.exposuresInto(ks, sorted, xs, nil)
	for j, k := range ks {
		for r, o := range sorted {
			if got, want := xs[j][r], l.Exposure(k, o.start, o.end); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("in time order, tenant %d, window [%d, %d]: exposuresInto %v, Exposure %v", k, o.start, o.end, got, want)
			}
		}
	}
	// With the spreads: the same exposures, and each tenant's spread what
	// variationProblem's pass over them finds; a NaN in one tenant's load.
	l.Values[1][20] = math.NaN()
	l.Prepare()
	ks = []int{2, 0, 1}
	xs = [][]float64{make([]float64, len(rows)), make([]float64, len(rows)), make([]float64, len(rows))}
	spreads := make([]spread, len(ks))
	l.exposuresInto(ks, rows, xs, spreads)
	for j, k := range ks {
		for r, o := range rows {
			if got, want := xs[j][r], l.Exposure(k, o.start, o.end); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("with spreads, tenant %d, window [%d, %d]: exposuresInto %v, Exposure %v", k, o.start, o.end, got, want)
			}
		}
		got, want := spreads[j], spreadOf(xs[j])
		if math.Float64bits(got.lo) != math.Float64bits(want.lo) || math.Float64bits(got.hi) != math.Float64bits(want.hi) || got.nan != want.nan {
			t.Errorf("tenant %d: spread %+v, of its exposures %+v", k, got, want)
		}
		if want.nan != (k == 1) {
			t.Errorf("tenant %d: NaN in its exposures %v", k, want.nan)
		}
	}
}

func TestSMUtilLoad(t *testing.T) {
	tr := ingest.New()
	metric := tr.Strings.Intern(ingest.MetricNVMLProcessSMUtil)
	other := tr.Strings.Intern("nvml.process.mem_util")
	sample := func(pid uint32, at int64, v float64) ingest.Sample {
		return ingest.Sample{Time: at, Value: v, Metric: metric, Pid: pid, Device: 0, Instance: -1}
	}
	tr.Samples = []ingest.Sample{
		// pid 1 (A): 40% in (0,1], 60% in (1,2], then silent until 5: idle.
		sample(1, 1e9, 40), sample(1, 2e9, 60), sample(1, 5e9, 20),
		// pid 3 (also A) adds 10% over (1,2].
		sample(3, 1e9, 10), sample(3, 2e9, 10),
		// pid 2 (B): one sample; it covers the default 1 s before it.
		sample(2, 3.5e9, 50),
		// Another metric and an unmapped pid are ignored.
		{Time: 1e9, Value: 99, Metric: other, Pid: 1, Instance: -1},
		sample(9, 1e9, 99),
	}
	tm := NewTenantMap(map[uint32]string{1: "A", 2: "B", 3: "A"})
	l, err := SMUtilLoad(tr, "", tm, Grid{Origin: 0, Width: 1e9, N: 6})
	if err != nil {
		t.Fatal(err)
	}
	checkSeries(t, "A", l.Series("A"), []float64{0.5, 0.7, 0, 0, 0.2, 0})
	checkSeries(t, "B", l.Series("B"), []float64{0, 0, 0.25, 0.25, 0, 0})
	if len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "1 processes") {
		t.Errorf("notes %q", l.Notes)
	}
	if _, err := SMUtilLoad(tr, "nvml.gpm.sm_util", tm, Grid{Width: 1e9, N: 1}); err == nil {
		t.Error("a missing metric is not an error")
	}
}

func TestRequestLoads(t *testing.T) {
	g := Grid{Origin: 0, Width: 1e9, N: 4}
	reqs := []Request{
		{Tenant: TenantOf("A"), Arrival: 0.5e9, End: 2.5e9, TTFT: 0.5e9, InputTokens: 100, OutputTokens: 20},
		{Tenant: TenantOf("A"), Arrival: 1e9, End: 2e9, InputTokens: 50, OutputTokens: 10},
		{Tenant: TenantOf("B"), Arrival: 3.2e9, End: 3.4e9, TTFT: 0.1e9, InputTokens: 10, OutputTokens: 1},
		// A again after B.
		{Tenant: TenantOf("A"), Arrival: 3e9, End: 3.5e9, TTFT: 0.25e9, InputTokens: 8, OutputTokens: 2},
	}
	inflight := TokensInFlightLoad(reqs, g)
	// A: 120 tokens over [0.5, 2.5), 60 over [1, 2), 10 over [3, 3.5).
	checkSeries(t, "A in flight", inflight.Series("A"), []float64{60, 180, 60, 5})
	checkSeries(t, "B in flight", inflight.Series("B"), []float64{0, 0, 0, 2.2})
	prefill := PrefillTokensLoad(reqs, g)
	// 100 tokens over 0.5 s = 200 tokens/s within [0.5, 1); 50 tokens with no
	// TTFT land in the arrival bin; B's 10 tokens over 0.1 s = 100 tokens/s
	// for a tenth of bin 3; A's last 8 tokens over 0.25 s = 32 tokens/s for
	// a quarter of it.
	checkSeries(t, "A prefill", prefill.Series("A"), []float64{100, 50, 0, 8})
	checkSeries(t, "B prefill", prefill.Series("B"), []float64{0, 0, 0, 10})
	if inflight.Kind.Unit() != "tokens" || prefill.Kind.Unit() != "tokens/s" {
		t.Errorf("units %q %q", inflight.Kind.Unit(), prefill.Kind.Unit())
	}
}

func TestDefaultStep(t *testing.T) {
	g := Grid{Width: 1e9, N: 4}
	mk := func(kind LoadKind, v ...float64) *Load {
		l := newLoad(kind, g, []string{"A", "B"})
		copy(l.Values[0], v)
		copy(l.Values[1], []float64{1000, 9000, 5000, 20000})
		return l
	}
	tests := []struct {
		name string
		load *Load
		want float64
	}{
		{"fractions step 10 pp", mk(LoadGPUBusy, 0.1, 0.9, 0.5, 0.2), 0.1},
		// A's sd 387 is the smaller (B's is 8,400): 200.
		{"tokens round down to 1-2-5 of the smallest sd", mk(LoadTokensInFlight, 100, 400, 700, 1000), 200},
		// A has one busy bin, so B's sd decides: 5,000.
		{"one busy bin", mk(LoadTokensInFlight, 0, 0, 5, 0), 5000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := defaultStep(tc.load); got != tc.want {
				t.Errorf("step %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseNames(t *testing.T) {
	for _, k := range []LoadKind{LoadGPUBusy, LoadSMUtil, LoadTokensInFlight, LoadPrefillTokens} {
		if got, err := ParseLoadKind(k.String()); err != nil || got != k {
			t.Errorf("ParseLoadKind(%q) = %v, %v", k, got, err)
		}
	}
	for _, m := range []Metric{MetricTTFT, MetricTPOT, MetricE2E} {
		if got, err := ParseMetric(m.String()); err != nil || got != m {
			t.Errorf("ParseMetric(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMetric("itl"); err == nil {
		t.Error("ParseMetric accepted itl")
	}
	if _, err := ParseLoadKind("power"); err == nil {
		t.Error("ParseLoadKind accepted power")
	}
}

func TestBuildLoadPicksTheBestAvailable(t *testing.T) {
	reqs := []Request{
		{Tenant: TenantOf("A"), Arrival: 0, End: 2e9, InputTokens: 10, OutputTokens: 10},
		{Tenant: TenantOf("B"), Arrival: 1e9, End: 3e9, InputTokens: 10, OutputTokens: 10},
	}
	tm := NewTenantMap(map[uint32]string{1: "A", 2: "B"})
	sample := func(tr *ingest.Trace, pid uint32) ingest.Sample {
		return ingest.Sample{Time: 1e9, Value: 50, Metric: tr.Strings.Intern(ingest.MetricNVMLProcessSMUtil), Pid: pid, Instance: -1}
	}
	busy := LoadGPUBusy
	tests := []struct {
		name  string
		build func(tr *ingest.Trace)
		kind  *LoadKind
		want  LoadKind
		note  string
	}{
		{"kernels of two tenants", func(tr *ingest.Trace) {
			tr.GPUOps = opsTrace(kernel(1, 1, 0, 1e8), kernel(2, 1, 2e8, 3e8))
		}, nil, LoadGPUBusy, "load: gpu_busy, from the kernels of 2 tenants"},
		{"one engine process: NVML samples", func(tr *ingest.Trace) {
			tr.GPUOps = opsTrace(kernel(1, 1, 0, 1e8))
			tr.Samples = []ingest.Sample{sample(tr, 1), sample(tr, 2)}
		}, nil, LoadSMUtil, "load: sm_util, from NVML per-process samples of 2 tenants (kernels of 1 tenants)"},
		{"no per-tenant GPU data: tokens", func(tr *ingest.Trace) {
			tr.Samples = []ingest.Sample{sample(tr, 1)}
		}, nil, LoadTokensInFlight, "no per-tenant GPU load: kernels of 0 tenants, NVML samples of 1 tenants"},
		{"no samples at all", func(*ingest.Trace) {}, nil, LoadTokensInFlight, "kernels of 0 tenants, no NVML per-process samples"},
		{"asked for", func(*ingest.Trace) {}, &busy, LoadGPUBusy, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := ingest.New()
			tc.build(tr)
			l, err := BuildLoad(tr, reqs, tm, LoadOptions{Kind: tc.kind})
			if err != nil {
				t.Fatal(err)
			}
			if l.Kind != tc.want {
				t.Errorf("kind %v, want %v", l.Kind, tc.want)
			}
			if notes := strings.Join(l.Notes, "; "); !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q lack %q", notes, tc.note)
			}
		})
	}
}
