package signals

import (
	"math"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

func TestBenjaminiHochberg(t *testing.T) {
	// Benjamini & Hochberg 1995's procedure by hand: m = 5, sorted p
	// 0.001, 0.008, 0.039, 0.041, 0.9 → q = p·m/rank, made monotone from the
	// top: 0.005, 0.02, 0.05125, 0.05125, 0.9.
	devs := []Deviation{{Name: "d", P: 0.041}, {Name: "a", P: 0.001}, {Name: "e", P: 0.9}, {Name: "b", P: 0.008}, {Name: "c", P: 0.039}}
	kept := benjaminiHochberg(devs, 0.05)
	if len(kept) != 2 || kept[0].Name != "a" || kept[1].Name != "b" {
		t.Fatalf("kept %+v", kept)
	}
	want := map[string]float64{"a": 0.005, "b": 0.02, "c": 0.05125, "d": 0.05125, "e": 0.9}
	for _, d := range devs {
		if math.Abs(d.Q-want[d.Name]) > 1e-12 {
			t.Errorf("q(%s) = %v, want %v", d.Name, d.Q, want[d.Name])
		}
	}
}

func TestLookup(t *testing.T) {
	cases := map[string]string{
		"vllm:gpu_cache_usage_perc":                  "vllm:kv_cache_usage_perc",
		"vllm:kv_cache_usage_perc":                   "vllm:kv_cache_usage_perc",
		"DCGM_FI_DEV_CLOCKS_EVENT_REASONS":           "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
		"DCGM_FI_PROF_SM_UTIL_RATIO":                 "DCGM_FI_PROF_SM_ACTIVE",
		"node_ethtool_received_prio5_pause":          "node_ethtool_received_prio{p}_pause",
		"node_ethtool_received_prio3_pause_duration": "node_ethtool_received_prio{p}_pause_duration",
		"node_ethtool_received_prio3_marked":         "node_ethtool_received_ecn_mark",
	}
	for name, want := range cases {
		e := Lookup(name)
		if e == nil || e.Name != want {
			t.Errorf("Lookup(%s) = %+v, want %s", name, e, want)
		}
	}
	if e := Lookup("my_app_requests_total"); e != nil {
		t.Errorf("an unknown metric is catalogued: %+v", e)
	}
	for _, e := range Catalog {
		if e.Layer == "" || e.Role == "" || e.Unit == "" || e.Exporter == "" {
			t.Errorf("catalog entry %s is missing its layer, role, unit or exporter", e.Name)
		}
	}
}

// TestGridRates: a counter becomes increments per second, a decrease is a
// reset (Prometheus rate()); an untyped series that never decreases is a
// counter too; a gauge is its window mean.
func TestGridRates(t *testing.T) {
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: "x"}}
	st := ingest.NewSeriesTable(tr)
	add := func(name string, typ ingest.MetricType, vals ...float64) {
		id := st.ID(ingest.Series{Name: tr.Strings.Intern(name), Family: tr.Strings.Intern(name), Type: typ, Resource: -1})
		for i, v := range vals {
			tr.Samples = append(tr.Samples, ingest.Sample{Time: int64(i) * 1e9, Value: v, Series: id, Metric: tr.Strings.Intern(name)})
		}
	}
	add("c_total", ingest.MetricCounter, 0, 10, 20, 5, 15, 25)
	add("node_ethtool_received_prio3_pause", ingest.MetricUntyped, 100, 100, 104, 110, 110, 111)
	add("g", ingest.MetricGauge, 1, 2, 3, 4, 5, 6)
	tr.Sort()
	sigs := gridSignals(tr, 0, 1e9, 6)
	got := map[string][]float64{}
	for _, s := range sigs {
		got[s.name] = s.vals
	}
	check := func(name string, want ...float64) {
		t.Helper()
		g := got[name]
		if len(g) != len(want) {
			t.Fatalf("%s: %v", name, g)
		}
		for i := range want {
			if math.IsNaN(want[i]) != math.IsNaN(g[i]) || (!math.IsNaN(want[i]) && g[i] != want[i]) {
				t.Errorf("%s = %v, want %v", name, g, want)
				return
			}
		}
	}
	nan := math.NaN()
	check("c_total", nan, 10, 10, 5, 10, 10)
	check("node_ethtool_received_prio3_pause", nan, 0, 4, 6, 0, 1)
	check("g", 1, 2, 3, 4, 5, 6)
	if s := sigs[0]; s.transform != TransformRate {
		t.Errorf("%s transform %s", s.name, s.transform)
	}
}
