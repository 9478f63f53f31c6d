package causal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	gonumstat "gonum.org/v1/gonum/stat"
)

// quietLevel is gonum's LinInterp 5th percentile of the sorted sample, to
// the bit, for every sample size around the rule's steps, with ties, and
// for samples a sort must handle (NaN, negative zero); the sample itself is
// left as it was.
func TestQuietLevelMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	sorted := func(x []float64) float64 {
		s := slices.Clone(x)
		slices.Sort(s)
		return gonumstat.Quantile(0.05, gonumstat.LinInterp, s, nil)
	}
	for n := 1; n <= 130; n++ {
		for _, draw := range []func() float64{
			func() float64 { return rng.Float64() * 3 },
			func() float64 { return float64(rng.IntN(4)) / 3 },
		} {
			x := make([]float64, n)
			for i := range x {
				x[i] = draw()
			}
			orig := slices.Clone(x)
			if got, want := quietLevel(x), sorted(x); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("n=%d: quietLevel = %v, gonum on the sorted sample %v (sample %v)", n, got, want, orig)
			}
			if !slices.Equal(x, orig) {
				t.Fatalf("n=%d: quietLevel reordered its input", n)
			}
		}
	}
	for _, x := range [][]float64{{1, math.NaN(), 2}, {math.Copysign(0, -1), 0, 0, 1, 2}} {
		if got, want := quietLevel(x), sorted(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%v: quietLevel = %v, gonum %v", x, got, want)
		}
	}
}

// shares3 is share at each of its three coefficients, to the bit.
func TestShares3MatchesShare(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for n := 1; n < 300; n += 1 + n/7 {
		rows, lat, x := make([]obs, n), make([]float64, n), make([]float64, n)
		for i := range rows {
			rows[i].lat = rng.Float64() * 1e9
			lat[i] = rows[i].lat
			x[i] = rng.Float64() * 4
		}
		base, b := rng.Float64(), [3]float64{rng.NormFloat64(), rng.NormFloat64() / 10, -rng.Float64()}
		s1, s2, s3 := shares3(rows, x, base, b[0], b[1], b[2])
		for i, got := range []float64{s1, s2, s3} {
			if want := share(lat, x, base, b[i]); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("n=%d, beta %v: shares3 = %v, share %v", n, b[i], got, want)
			}
		}
	}
}

// variationProblem's plain comparisons give the reason the math.Min and
// math.Max bounds gave, on samples with NaN, signed zeros and infinities.
func TestVariationProblemMatchesMinMax(t *testing.T) {
	old := func(x []float64) string {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range x {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		switch {
		case hi <= 0:
			return "none"
		case hi-lo <= 1e-9*math.Max(1, math.Abs(hi)):
			return "flat"
		}
		return ""
	}
	nan, inf, neg0 := math.NaN(), math.Inf(1), math.Copysign(0, -1)
	for _, x := range [][]float64{
		nil, {0}, {neg0}, {0, neg0}, {neg0, 0}, {-1, neg0}, {1, 1}, {1, 2}, {2, 1e-12 + 2},
		{nan}, {1, nan}, {nan, 0}, {0, 0, nan}, {inf}, {1, inf}, {-inf, 3}, {inf, inf}, {-inf, neg0},
	} {
		got := variationProblem(x, "a", "b", MetricTTFT, LoadTokensInFlight)
		switch want := old(x); {
		case want == "" && got != "",
			want == "none" && !strings.Contains(got, "had no"),
			want == "flat" && !strings.Contains(got, "did not vary"):
			t.Errorf("%v: %q, want the %q case", x, got, want)
		}
	}
}

// mode counts small values in an array and larger ones in a map, and gives
// what counting every value in a map gives: the most common non-negative
// value, the smallest on ties, −1 for none.
func TestModeMatchesCounting(t *testing.T) {
	counting := func(vs []int16) int16 {
		count := map[int16]int{}
		for _, v := range vs {
			if v >= 0 {
				count[v]++
			}
		}
		best, bestN := int16(-1), 0
		for v, n := range count {
			if n > bestN || (n == bestN && v < best) {
				best, bestN = v, n
			}
		}
		return best
	}
	rng := rand.New(rand.NewPCG(13, 17))
	cases := [][]int16{nil, {-1}, {-1, -2}, {0}, {63, 64}, {64, 63}, {100, 100, 2}, {7, 300, 300, 7}, {math.MaxInt16, 0, math.MaxInt16}}
	for range 200 {
		vs := make([]int16, rng.IntN(12))
		for i := range vs {
			vs[i] = []int16{-1, 0, 1, 2, 63, 64, 65, 1000}[rng.IntN(8)]
		}
		cases = append(cases, vs)
	}
	for _, vs := range cases {
		if got, want := mode(len(vs), func(i int) int16 { return vs[i] }), counting(vs); got != want {
			t.Errorf("mode of %v = %d, want %d", vs, got, want)
		}
	}
}

// The requests' placement is counted without a copy of their devices and
// instances (two slices a tenant, as long as its requests).
func TestTenantPlacementAllocates(t *testing.T) {
	reqs := make([]*Request, 1000)
	for i := range reqs {
		reqs[i] = &Request{Device: int16(i % 3), Instance: 1}
	}
	if a := testing.AllocsPerRun(5, func() { tenantPlacement(reqs, "a", nil) }); a != 0 {
		t.Errorf("tenantPlacement of 1000 requests: %.0f allocations, want 0", a)
	}
}

// collectRows builds each target's rows in the same scratch memory, and a
// pair's shareAt, which calibrate calls after every target is fitted, reads
// latencies of its own: the next target's rows overwriting the scratch
// change none of the first target's shares. With the scratch sized for the
// largest target, collecting rows allocates only the list of the controls
// it uses.
func TestRowScratchReused(t *testing.T) {
	reqs, load, _ := prepared(defaultSim(1))
	load.finish()
	byTenant := map[string][]*Request{}
	for i := range reqs {
		name := reqs[i].Tenant.String()
		byTenant[name] = append(byTenant[name], &reqs[i])
	}
	o := Options{}.withDefaults()
	var rsc rowScratch
	var sc regressScratch
	rows, _ := collectRows(byTenant["B"], MetricTTFT, o.Controls, &rsc)
	pairs := requestRegression("B", MetricTTFT, rows, load, o, 0.1, &sc)
	want := make([]float64, len(pairs))
	estimable := 0
	for i, p := range pairs {
		if p.shareAt != nil {
			want[i] = p.shareAt(float64(p.Coef) * 2)
			estimable++
		}
	}
	if estimable == 0 {
		t.Fatal("no estimable pair for B")
	}
	collectRows(byTenant["A"], MetricTPOT, o.Controls, &rsc)
	for i, p := range pairs {
		if p.shareAt == nil {
			continue
		}
		if got := p.shareAt(float64(p.Coef) * 2); math.Float64bits(got) != math.Float64bits(want[i]) {
			t.Errorf("%s → B: share %v after the scratch was reused, %v before", p.Source, got, want[i])
		}
	}
	largest := 0
	for _, r := range byTenant {
		largest = max(largest, len(r))
	}
	sc.reserve(largest, 1+len(load.Tenants)+len(o.Controls), len(o.Controls), &rsc)
	if a := testing.AllocsPerRun(5, func() { collectRows(byTenant["C"], MetricE2E, o.Controls, &rsc) }); a > 1 {
		t.Errorf("collectRows into a reserved scratch: %.0f allocations, want 1 (the controls used)", a)
	}
}

// collectRows' two passes give the rows, controls and notes of a pass for
// each control and one more for the rows (as it was built before), on
// requests missing latencies, windows and controls: a control known for
// most of them (used, the rest left out), one for half (not used), and the
// same scratch taken by target after target.
func TestCollectRowsMatchesPassPerControl(t *testing.T) {
	passPerControl := func(reqs []*Request, m Metric, controls []Control) (targetRows, []string) {
		var notes []string
		var base []*Request
		for _, r := range reqs {
			lat, ok := r.Latency(m)
			if !ok {
				continue
			}
			if _, _, ok := r.Window(m); !ok || lat <= 0 {
				continue
			}
			base = append(base, r)
		}
		var used []Control
		for _, c := range controls {
			known := 0
			for _, r := range base {
				if c.known(r) {
					known++
				}
			}
			switch {
			case len(base) == 0:
			case float64(known) >= controlCoverage*float64(len(base)):
				used = append(used, c)
			default:
				notes = append(notes, fmt.Sprintf("control %s known for only %d of %d requests; not used", c, known, len(base)))
			}
		}
		rows := targetRows{controls: used}
		dropped := 0
		for _, r := range base {
			lat, _ := r.Latency(m)
			s, e, _ := r.Window(m)
			o := obs{lat: float64(lat), y: math.Log(float64(lat)), start: s, end: e, ctrl: len(rows.ctrl)}
			vals := make([]float64, len(used))
			ok := true
			for j, c := range used {
				if vals[j], ok = c.value(r, logCount); !ok {
					break
				}
			}
			if !ok {
				dropped++
				continue
			}
			rows.obs = append(rows.obs, o)
			rows.ctrl = append(rows.ctrl, vals...)
		}
		if dropped > 0 {
			notes = append(notes, fmt.Sprintf("%d requests without every control were left out", dropped))
		}
		return rows, notes
	}
	rng := rand.New(rand.NewPCG(2, 9))
	var rsc rowScratch
	for target, share := range []float64{0.97, 0.5, 1, 0} {
		reqs := make([]*Request, 500+target*300)
		for i := range reqs {
			r := &Request{Arrival: rng.Int64N(1e12), TTFT: rng.Int64N(4e9) - 1e8, TPOT: rng.Int64N(1e8) - 1e6,
				BatchSize: rng.Float64() * 64, InputTokens: rng.IntN(4000) - 10, OutputTokens: rng.IntN(500)}
			r.End = r.Arrival + r.TTFT + rng.Int64N(2e10) - 1e9
			if rng.Float64() >= share {
				r.BatchSize = 0
			}
			if rng.IntN(50) == 0 {
				r.BatchSize = math.Inf(1)
			}
			reqs[i] = r
		}
		for _, m := range []Metric{MetricTTFT, MetricTPOT, MetricE2E} {
			want, wantNotes := passPerControl(reqs, m, AllControls)
			got, notes := collectRows(reqs, m, AllControls, &rsc)
			if !slices.Equal(notes, wantNotes) || !slices.Equal(got.controls, want.controls) || len(got.obs) != len(want.obs) {
				t.Fatalf("target %d %s: %d rows, controls %v, notes %q; want %d, %v, %q", target, m, len(got.obs), got.controls, notes, len(want.obs), want.controls, wantNotes)
			}
			for i := range want.obs {
				g, w := got.obs[i], want.obs[i]
				if g != w || !slices.Equal(got.controlsOf(&g), want.controlsOf(&w)) {
					t.Fatalf("target %d %s row %d: %+v %v, want %+v %v", target, m, i, g, got.controlsOf(&g), w, want.controlsOf(&w))
				}
			}
		}
	}
}

// expm1x3 and expm1x6 are math.Expm1 of each argument to the bit: on
// arguments spread over Expm1's primary range (three or six at a time
// there, their own path), at and around that range's ends, and beyond
// them in any lane (math.Expm1 for all). Where expm1.go's copy of Go's
// steps is built (amd64 below GOAMD64=v3) this tests the copy; elsewhere
// expm1_fused.go calls math.Expm1 itself.
func TestExpm1x3MatchesExpm1(t *testing.T) {
	const ln2Half, tiny = 3.46573590279972654709e-01, 1.0 / (1 << 54)
	edges := []float64{0, math.Copysign(0, -1), tiny, math.Nextafter(tiny, 0), math.Nextafter(tiny, 1), ln2Half,
		math.Nextafter(ln2Half, 0), math.Nextafter(ln2Half, 1), 1.0397, 38.9, 709.8, 710, math.Inf(1), math.Inf(-1), math.NaN()}
	rng := rand.New(rand.NewPCG(8, 1))
	primary := func() float64 {
		return math.Copysign(math.Exp(rng.Float64()*math.Log(ln2Half/tiny))*tiny, rng.Float64()-0.5)
	}
	draw := func() float64 {
		switch rng.IntN(4) {
		case 0:
			e := edges[rng.IntN(len(edges))]
			if rng.IntN(2) == 0 {
				e = -e
			}
			return e
		case 1:
			return rng.NormFloat64() * 20
		}
		return primary()
	}
	check := func(x [3]float64) {
		var got [3]float64
		got[0], got[1], got[2] = expm1x3(x[0], x[1], x[2])
		for i := range x {
			if want := math.Expm1(x[i]); math.Float64bits(got[i]) != math.Float64bits(want) {
				t.Fatalf("expm1x3%v lane %d = %v (%#x), math.Expm1 %v (%#x)", x, i, got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
			}
		}
	}
	check6 := func(x [6]float64) {
		var got [6]float64
		got[0], got[1], got[2], got[3], got[4], got[5] = expm1x6(x[0], x[1], x[2], x[3], x[4], x[5])
		for i := range x {
			if want := math.Expm1(x[i]); math.Float64bits(got[i]) != math.Float64bits(want) {
				t.Fatalf("expm1x6%v lane %d = %v (%#x), math.Expm1 %v (%#x)", x, i, got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
			}
		}
	}
	for range 200_000 {
		check([3]float64{primary(), primary(), primary()})
		check([3]float64{draw(), draw(), draw()})
		check6([6]float64{primary(), primary(), primary(), primary(), primary(), primary()})
		// One lane drawn anywhere, the others in the primary range.
		lanes := [6]float64{primary(), primary(), primary(), primary(), primary(), primary()}
		lanes[rng.IntN(6)] = draw()
		check6(lanes)
	}
}

// Control.value through rowScratch.logOf is Control.value through
// math.Log to the bit, computed or from the table of logarithms, for every control and for lengths around the
// table's bounds (none, one, negative, its last and past it).
func TestRowScratchLogsMatchLog(t *testing.T) {
	var sc rowScratch
	lengths := []int{-3, 0, 1, 2, 3, 1023, 1024, 1025, 70_000, maxLogMemo - 1, maxLogMemo, maxLogMemo + 1, 1 << 40}
	rng := rand.New(rand.NewPCG(4, 4))
	for range 3000 {
		lengths = append(lengths, rng.IntN(5000))
	}
	for pass := range 2 { // the second from the table
		for _, n := range lengths {
			r := &Request{InputTokens: n, OutputTokens: n + 1, BatchSize: float64(n) / 3}
			for _, c := range AllControls {
				got, gotOK := c.value(r, sc.logOf)
				want, wantOK := c.value(r, logCount)
				if math.Float64bits(got) != math.Float64bits(want) || gotOK != wantOK {
					t.Fatalf("pass %d, length %d, %s: %v %v, Control.value %v %v", pass, n, c, got, gotOK, want, wantOK)
				}
			}
		}
	}
}

// columnsInto lays the columns out row-major, element for element, in the
// buffer lent when it is large enough.
func TestColumnsIntoIsRowMajor(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	cols := make([][]float64, 7)
	for j := range cols {
		cols[j] = make([]float64, 301)
		for i := range cols[j] {
			cols[j][i] = rng.NormFloat64()
		}
	}
	buf := make([]float64, 7*301+5)
	m := columnsInto(cols, buf)
	if r, c := m.Dims(); r != 301 || c != 7 || &m.RawMatrix().Data[0] != &buf[0] {
		t.Fatalf("%d×%d, in the buffer lent: %v", r, c, &m.RawMatrix().Data[0] == &buf[0])
	}
	for j, col := range cols {
		for i, v := range col {
			if math.Float64bits(buf[i*7+j]) != math.Float64bits(v) || m.At(i, j) != v {
				t.Fatalf("row %d column %d: %v, want %v", i, j, buf[i*7+j], v)
			}
		}
	}
}

// bracketOrderStats gives x₍ᵢ₎ and x₍ᵢ₋₁₎ of a sort, to the bit, at the
// quiet level's rank and others, on samples in random order, sorted,
// reversed, with few distinct values (ties across the bracket's ends), and
// with the evenly spaced elements it brackets from unlike the rest (then it
// refuses, and quietLevel selects in the whole copy); quietLevel of each is
// gonum's on the sorted sample.
func TestBracketOrderStatsMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 3))
	var refused, atEdge, inside int
	for trial := range 120 {
		n := 4*bracketSample + rng.IntN(60_000)
		x := make([]float64, n)
		for j := range x {
			switch trial % 5 {
			case 0, 1:
				x[j] = rng.NormFloat64()*1e6 + 5e6
			case 2:
				x[j] = float64(rng.IntN(7))
			case 3:
				x[j] = float64(j % 3)
			case 4:
				x[j] = rng.Float64()
			}
		}
		switch trial % 4 {
		case 1:
			slices.Sort(x)
		case 2:
			slices.Sort(x)
			slices.Reverse(x)
		case 3:
			for j := range bracketSample { // the bracket's sample far above the rest
				x[j*n/bracketSample] = 1e12 + float64(j)
			}
		}
		sorted := slices.Clone(x)
		slices.Sort(sorted)
		for _, i := range []int{max(0, int(math.Ceil(0.05*float64(n)))-1), 0, 1, n / 2, n - 1} {
			buf := make([]float64, n)
			xi, prev, ok := bracketOrderStats(x, buf, i)
			if !ok {
				if continuous := trial%5 != 2 && trial%5 != 3; continuous && trial%4 == 0 && i == max(0, int(math.Ceil(0.05*float64(n)))-1) {
					// The bracket drawn from the sample's order statistics
					// holds the 5th percentile of values in no order.
					t.Errorf("trial %d, n %d: the bracket missed the 5th percentile of unordered distinct values", trial, n)
				}
				refused++
				continue
			}
			if i > 0 && i == slices.Index(sorted, sorted[i]) {
				atEdge++ // x₍ᵢ₋₁₎ < x₍ᵢ₎: prev may come from below the bracket
			} else {
				inside++
			}
			if math.Float64bits(xi) != math.Float64bits(sorted[i]) || i > 0 && math.Float64bits(prev) != math.Float64bits(sorted[i-1]) {
				t.Fatalf("trial %d, n %d, i %d: %v and %v, a sort gives %v and %v", trial, n, i, xi, prev, sorted[i], sorted[max(0, i-1)])
			}
		}
		want := gonumstat.Quantile(0.05, gonumstat.LinInterp, sorted, nil)
		if got := quietLevel(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("trial %d, n %d: quietLevel %v, gonum on the sorted sample %v", trial, n, got, want)
		}
	}
	if refused == 0 || atEdge == 0 || inside == 0 {
		t.Errorf("cases not all met: %d refused, %d with x₍ᵢ₋₁₎ < x₍ᵢ₎, %d with ties", refused, atEdge, inside)
	}
}
