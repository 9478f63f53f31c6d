package causal

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/golden"
)

// prepared runs the simulator and returns its requests, busy load and map,
// so a test can change them before Analyze.
func prepared(cfg simConfig) ([]Request, *Load, *TenantMap) {
	run := simulate(cfg)
	tm := MapTenants(run.trace, MapOptions{})
	end := int64(cfg.seconds) * 1e9
	for i := range run.requests {
		end = max(end, run.requests[i].End)
	}
	return run.requests, BusyLoad(run.trace.GPUOps, tm, NewGrid(0, end, 1e9)), tm
}

// With too little data or no variation the result says the effect is not
// estimable and why, pair by pair, instead of printing a number.
func TestNotEstimable(t *testing.T) {
	small := func(seconds int) func() simConfig {
		return func() simConfig { c := defaultSim(7); c.seconds = seconds; return c }
	}
	tests := []struct {
		name   string
		cfg    func() simConfig
		change func(reqs []Request, l *Load) []Request
		opts   Options
		pair   pairKey
		lag    bool // the reason is the lag model's
		reason string
	}{
		{
			name: "too few requests",
			cfg:  func() simConfig { c := defaultSim(7); c.tenants[1].rate = 0.03; return c },
			pair: pairKey{"A", "B", MetricTTFT}, reason: "requests of B with ttft (need 50)",
		},
		{
			name: "too few clusters",
			cfg:  small(150),
			pair: pairKey{"A", "B", MetricTPOT}, reason: "time clusters of 20 s (need 10",
		},
		{
			name: "too few bins for the lag model",
			cfg:  small(200), opts: Options{ClusterWidth: 10e9},
			pair: pairKey{"A", "B", MetricTPOT}, lag: true, reason: "bins with B requests",
		},
		{
			name: "source without load",
			cfg:  func() simConfig { return defaultSim(7) },
			change: func(reqs []Request, l *Load) []Request {
				clear(l.Values[l.Index("C")])
				return reqs
			},
			pair: pairKey{"C", "B", MetricTTFT}, reason: "C had no gpu_busy load during B's ttft windows",
		},
		{
			name: "constant load",
			cfg:  func() simConfig { return defaultSim(7) },
			change: func(reqs []Request, l *Load) []Request {
				for i := range l.Values[l.Index("C")] {
					l.Values[l.Index("C")][i] = 0.4
				}
				return reqs
			},
			pair: pairKey{"C", "A", MetricTPOT}, reason: "C's gpu_busy load did not vary",
		},
		{
			name: "collinear loads",
			cfg:  func() simConfig { return defaultSim(7) },
			change: func(reqs []Request, l *Load) []Request {
				copy(l.Values[l.Index("D")], l.Values[l.Index("C")])
				return reqs
			},
			pair: pairKey{"D", "A", MetricTTFT}, reason: "collinear",
		},
		{
			name: "no decode phase",
			cfg:  func() simConfig { return defaultSim(7) },
			change: func(reqs []Request, l *Load) []Request {
				for i := range reqs {
					if reqs[i].Tenant.String() == "B" {
						reqs[i].OutputTokens = 1
					}
				}
				return reqs
			},
			pair: pairKey{"A", "B", MetricTPOT}, reason: "B has no requests with tpot",
		},
		{
			name: "target without requests",
			cfg:  func() simConfig { return defaultSim(7) },
			change: func(reqs []Request, l *Load) []Request {
				var out []Request
				for _, r := range reqs {
					if r.Tenant.String() != "B" {
						out = append(out, r)
					}
				}
				return out
			},
			pair: pairKey{"B", "A", MetricTTFT}, reason: "", // B is still a source: estimable
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reqs, l, tm := prepared(tc.cfg())
			if tc.change != nil {
				reqs = tc.change(reqs, l)
				l.Prepare()
			}
			res, err := Analyze(Input{Requests: reqs, Load: l, Mapping: tm}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Pair(tc.pair.source, tc.pair.target, tc.pair.metric)
			if p == nil {
				t.Fatalf("no pair %s", tc.pair)
			}
			if tc.reason == "" {
				if !p.Estimable {
					t.Fatalf("%s not estimable: %s", tc.pair, p.Reason)
				}
				return
			}
			if tc.lag {
				if !p.Estimable || p.Lag == nil || p.Lag.Estimable || !strings.Contains(p.Lag.Reason, tc.reason) {
					t.Fatalf("%s: estimable %v, lag %+v; want the lag model not estimable (%q)", tc.pair, p.Estimable, p.Lag, tc.reason)
				}
				if !p.Lag.Coef.IsNaN() || !p.Lag.GrangerP.IsNaN() {
					t.Errorf("a lag model that is not estimable still has figures: %+v", p.Lag)
				}
				return
			}
			if p.Estimable || p.Verdict != VerdictNotEstimable || !strings.Contains(p.Reason, tc.reason) {
				t.Fatalf("%s: estimable %v verdict %q reason %q; want not estimable because %q", tc.pair, p.Estimable, p.Verdict, p.Reason, tc.reason)
			}
			for name, v := range map[string]Float{"effect_ms": p.EffectMs, "ci_low_ms": p.CILowMs, "q": p.Q, "share": p.Share} {
				if !v.IsNaN() {
					t.Errorf("%s = %v on a pair that is not estimable", name, v)
				}
			}
		})
	}
}

func TestJudge(t *testing.T) {
	base := func() Pair {
		return Pair{Source: "A", Target: "B", Estimable: true, P: 0.001, Coef: 1, EffectPct: 10,
			Lag: &LagResult{Estimable: true, PlaceboP: 0.5}}
	}
	tests := []struct {
		name   string
		change func(p *Pair)
		want   Verdict
		note   bool
	}{
		{"interference", func(*Pair) {}, VerdictInterference, false},
		{"not estimable", func(p *Pair) { p.Estimable = false }, VerdictNotEstimable, false},
		{"no evidence", func(p *Pair) { p.P = 0.2 }, VerdictNoEvidence, false},
		{"negative effect", func(p *Pair) { p.Coef, p.EffectPct = -1, -10 }, VerdictAssociation, false},
		{"placebo fails", func(p *Pair) { p.Lag.PlaceboP = 0.01 }, VerdictAssociation, false},
		{"lag model not estimable", func(p *Pair) { p.Lag.Estimable, p.Lag.PlaceboP = false, nan }, VerdictInterference, false},
		{"negligible", func(p *Pair) { p.EffectPct = 0.5 }, VerdictNegligible, false},
		// A negative control is never interference nor association.
		{"isolated and significant", func(p *Pair) { p.Isolated = true }, VerdictControlFired, true},
		{"isolated, below the threshold", func(p *Pair) { p.Isolated, p.EffectPct = true, 0.5 }, VerdictControl, false},
		{"isolated, not significant", func(p *Pair) { p.Isolated, p.P = true, 0.2 }, VerdictControl, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.change(&p)
			// A second pair with a large p so BH has m = 2.
			res := &Result{Pairs: []Pair{p, {Source: "B", Target: "A", Estimable: true, P: 0.9, Coef: 0.1, EffectPct: 1}}}
			judge(res, DefaultOptions())
			if got := res.Pairs[0].Verdict; got != tc.want {
				t.Errorf("verdict %q, want %q", got, tc.want)
			}
			if hasNote := len(res.Notes) > 0; hasNote != tc.note {
				t.Errorf("notes %q", res.Notes)
			}
		})
	}
}

// When a negative control of a metric fires, that metric's interference
// findings are marked confounded; another metric's are not.
func TestJudgeNegativeControlConfounds(t *testing.T) {
	found := Pair{Source: "A", Target: "B", Metric: MetricTPOT, Estimable: true, P: 0.001, Coef: 1, EffectPct: 10}
	other := found
	other.Metric = MetricTTFT
	control := Pair{Source: "D", Target: "B", Metric: MetricTPOT, Estimable: true, P: 0.002, Coef: 0.5, EffectPct: 5, Isolated: true}
	small := control
	small.Metric, small.EffectPct = MetricTTFT, 0.2
	res := &Result{Metrics: []Metric{MetricTTFT, MetricTPOT}, Pairs: []Pair{found, other, control, small}}
	judge(res, DefaultOptions())
	want := []Verdict{VerdictConfounded, VerdictInterference, VerdictControlFired, VerdictControl}
	for i, w := range want {
		if got := res.Pairs[i].Verdict; got != w {
			t.Errorf("%s → %s %s: verdict %q, want %q", res.Pairs[i].Source, res.Pairs[i].Target, res.Pairs[i].Metric, got, w)
		}
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "tpot: a negative control fired") {
		t.Errorf("notes %q", res.Notes)
	}
}

// The JSON a CI job parses: the docs/design.md §11 keys of tenants.pairs[] are there,
// missing figures are null, and the result reads back.
func TestResultJSONContract(t *testing.T) {
	reqs, l, tm := prepared(defaultSim(3))
	res, err := Analyze(Input{Requests: reqs, Load: l, Mapping: tm}, Options{NoLagModel: true})
	if err != nil {
		t.Fatal(err)
	}
	// One pair that is not estimable, to see its nulls.
	res.Pairs = append(res.Pairs, *notEstimable("X", "B", MetricTTFT, "no load"))
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var generic struct {
		Pairs []map[string]any `json:"pairs"`
	}
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"source", "target", "effect_ms", "ci_low_ms", "ci_high_ms", "q", "share", "metric", "verdict"} {
		if _, ok := generic.Pairs[0][key]; !ok {
			t.Errorf("pairs[] lacks %q", key)
		}
	}
	last := generic.Pairs[len(generic.Pairs)-1]
	if last["effect_ms"] != nil || last["q"] != nil || last["estimable"] != false {
		t.Errorf("a pair that is not estimable encodes as %v", last)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, want := back.Pair("A", "B", MetricTPOT), res.Pair("A", "B", MetricTPOT)
	if got == nil || got.EffectMs != want.EffectMs || got.Q != want.Q || got.Metric != MetricTPOT || got.SEKind != want.SEKind {
		t.Errorf("round trip: %+v, want %+v", got, want)
	}
	if !back.Pairs[len(back.Pairs)-1].EffectMs.IsNaN() {
		t.Error("null did not read back as NaN")
	}
}

// Golden file of a whole result (LLMPROF_UPDATE_GOLDEN=1 go test rewrites it; review the
// diff): a smaller run with A → B, and D on its own MIG instance.
func TestResultGolden(t *testing.T) {
	cfg := defaultSim(11)
	cfg.seconds = 600
	cfg.tenants = []simTenant{cfg.tenants[0], cfg.tenants[1], cfg.tenants[3]}
	reqs, l, tm := prepared(cfg)
	res, err := Analyze(Input{Requests: reqs, Load: l, Mapping: tm}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(roundFloats(t, got), '\n')
	golden.Check(t, filepath.Join("testdata", "golden", t.Name()+".json"), got)
}

// roundFloats rewrites every number in JSON to 6 significant digits, so the
// golden file does not depend on the last bits of floating point.
func roundFloats(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return i
			}
			f, _ := x.Float64()
			if f == 0 {
				return 0.0
			}
			p := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(f))))
			return math.Round(f*p) / p
		}
		return x
	}
	out, err := json.MarshalIndent(walk(v), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMatrix(t *testing.T) {
	res := &Result{
		Tenants: []TenantSummary{{Name: "C"}, {Name: "A"}, {Name: "B"}},
		Pairs: []Pair{
			{Source: "A", Target: "B", Metric: MetricTPOT, EffectMs: 12},
			{Source: "C", Target: "A", Metric: MetricTPOT, EffectMs: 3},
			{Source: "A", Target: "B", Metric: MetricTTFT, EffectMs: 40},
		},
	}
	names, cells := res.Matrix(MetricTPOT)
	if strings.Join(names, ",") != "A,B,C" {
		t.Fatalf("names %v", names)
	}
	if cells[0][1] == nil || cells[0][1].EffectMs != 12 || cells[2][0] == nil || cells[2][0].EffectMs != 3 {
		t.Errorf("cells %v", cells)
	}
	for i := range names {
		if cells[i][i] != nil {
			t.Errorf("diagonal %d set", i)
		}
	}
	if cells[1][0] != nil {
		t.Error("B→A set without a pair")
	}
}

func TestAnalyzeRejectsUnusableInput(t *testing.T) {
	tests := []struct {
		name string
		in   Input
	}{
		{"no load", Input{}},
		{"empty grid", Input{Load: &Load{}}},
		{"series count", Input{Load: &Load{Grid: Grid{Width: 1, N: 1}, Tenants: []string{"A"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Analyze(tc.in, Options{}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// Requests without a tenant and controls known for too few requests are
// reported, not silently used.
func TestAnalyzeNotes(t *testing.T) {
	reqs, l, tm := prepared(defaultSim(5))
	reqs = append(reqs, Request{Arrival: 1e9, End: 2e9, TTFT: 1e8})
	for i := range reqs {
		if reqs[i].Tenant.String() == "C" && i%2 == 0 {
			reqs[i].BatchSize = 0
		}
	}
	res, err := Analyze(Input{Requests: reqs, Load: l, Mapping: tm}, Options{NoLagModel: true})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"1 requests without a tenant", "C ttft: control batch_size known for only"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if p := res.Pair("A", "C", MetricTTFT); p == nil || !p.Estimable {
		t.Errorf("C's pairs should still be estimable without the batch control: %+v", p)
	}
}

func TestPlacementAndIsolation(t *testing.T) {
	mapping := &TenantMap{Entries: []PidTenant{
		{Pid: 1, Tenant: "A", Device: 0, Instance: 1},
		{Pid: 2, Tenant: "B", Device: 0, Instance: 2},
		{Pid: 3, Tenant: "C", Device: 0, Instance: 1},
	}}
	reqs := map[string][]*Request{
		// Requests know the device but not the MIG instance (as from
		// attribution): the instance comes from the mapping.
		"A": {{Device: 0, Instance: -1}, {Device: 0, Instance: -1}},
		"B": {{Device: 0, Instance: -1}},
		// The requests' own placement wins over the mapping.
		"C": {{Device: 0, Instance: 2}, {Device: 0, Instance: 2}, {Device: 0, Instance: 1}},
		// Another GPU entirely.
		"E": {{Device: 1, Instance: -1}},
	}
	want := map[string][2]int16{"A": {0, 1}, "B": {0, 2}, "C": {0, 2}, "E": {1, -1}}
	res := &Result{}
	for name, w := range want {
		d, i := tenantPlacement(reqs[name], name, mapping)
		if d != w[0] || i != w[1] {
			t.Errorf("%s placed on %d/%d, want %d/%d", name, d, i, w[0], w[1])
		}
		res.Tenants = append(res.Tenants, TenantSummary{Name: name, Device: d, Instance: i})
	}
	isolated := map[[2]string]bool{{"A", "B"}: true, {"A", "C"}: true, {"B", "C"}: false, {"A", "E"}: true, {"E", "B"}: true}
	for pair := range isolated {
		res.Pairs = append(res.Pairs, Pair{Source: pair[0], Target: pair[1]})
	}
	markIsolation(res)
	for _, p := range res.Pairs {
		if p.Isolated != isolated[[2]string{p.Source, p.Target}] {
			t.Errorf("%s→%s isolated = %v", p.Source, p.Target, p.Isolated)
		}
	}
}

// boundTenants keeps the max tenants with the most load (then requests,
// then name), merges the others' load into one sorted-in source whose
// series is their sum, and drops their requests as targets.
func TestBoundTenants(t *testing.T) {
	grid := NewGrid(0, 4e9, 1e9)
	names := []string{"a", "b", "c", "d", "e"}
	l := newLoad(LoadTokensInFlight, grid, names)
	for k := range l.Values {
		for i := range l.Values[k] {
			l.Values[k][i] = float64(10 - 2*k) // a has the most load
		}
	}
	l.finish()
	byTenant := map[string][]*Request{"a": {{}}, "c": {{}, {}}, "e": {{}}, "z": {{}, {}, {}}}
	out, kept, others := boundTenants(l, byTenant, 2)
	if others == nil || others.Tenants != 4 || others.Requests != 6 || others.Name != "others (4 tenants)" {
		t.Fatalf("others %+v, want c, d, e and z (6 requests)", others)
	}
	if want := []string{"a", "b", "others (4 tenants)"}; !slices.Equal(out.Tenants, want) {
		t.Fatalf("tenants %v, want %v", out.Tenants, want)
	}
	if got := out.Series("others (4 tenants)"); got[0] != 6+4+2 {
		t.Errorf("merged load %v, want the sum of c, d and e (12)", got)
	}
	if m := out.members(out.Index("others (4 tenants)")); !slices.Equal(m, []string{"c", "d", "e"}) {
		t.Errorf("merged members %v", m)
	}
	if len(kept) != 1 || kept["a"] == nil {
		t.Errorf("targets %v, want a alone", kept)
	}
	if math.Abs(float64(others.LoadShare)-12.0/30) > 1e-12 {
		t.Errorf("load share %v, want 0.4", others.LoadShare)
	}
	if same, _, none := boundTenants(l, byTenant, 10); none != nil || same != l {
		t.Error("six tenants under a bound of 10 were merged")
	}
}
