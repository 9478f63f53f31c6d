package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"testing"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/compare/comparetest"
	"github.com/llmprof/llmprof/internal/golden"
)

// diffCase builds a comparison from synthetic runs with known truth.
func diffCase(t *testing.T, name string) *compare.Result {
	t.Helper()
	o := compare.DefaultOptions()
	o.Reps = 200
	var gates []string
	base := []compare.Run{comparetest.Workload{Requests: 400, Seed: 1, RunID: "base"}.Run()}
	var cand []compare.Run
	switch name {
	case "regression": // attention kernels 50% slower
		cand = []compare.Run{comparetest.Workload{Requests: 400, Seed: 2, RunID: "cand", AttentionFactor: 1.5}.Run()}
		gates = []string{"ttft.p99<+10%", "tpot.p50<+5%", "e2e.p90<+10%", "tpot.p50<+2ms", "throughput>-5%", "token.gpu.attention<+10%"}
		gates = append(gates[:3], gates[4:]...) // one rule per metric: keep the relative tpot rule
	case "pass": // the same workload measured again
		cand = []compare.Run{comparetest.Workload{Requests: 400, Seed: 2, RunID: "cand"}.Run()}
		gates = []string{"tpot.p50<+5%", "e2e.p50<+10%", "ttft.p90<+15%"}
	case "report": // no rules: a report only
		cand = []compare.Run{comparetest.Workload{Requests: 400, Seed: 2, RunID: "cand", QueueFactor: 3}.Run()}
	case "replication": // five runs per side, one noisy neighbour
		base, cand = nil, nil
		for i := range uint64(5) {
			base = append(base, comparetest.Workload{Requests: 100, Seed: 10 + i}.Run())
			cand = append(cand, comparetest.Workload{Requests: 100, Seed: 20 + i, NeighbourMS: 2}.Run())
		}
		gates = []string{"tpot.p50<+5%", "throughput>-5%"}
		o.Policy.FailOnInconclusive = true
	default:
		t.Fatalf("unknown case %s", name)
	}
	for _, s := range gates {
		g, err := compare.ParseGate(s)
		if err != nil {
			t.Fatal(err)
		}
		o.Policy.Gates = append(o.Policy.Gates, g)
	}
	res, err := compare.Compare(compare.Side{Label: "baseline.json", Runs: base}, compare.Side{Label: "candidate.json", Runs: cand}, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// diffGolden checks one rendered format against testdata/diff_NAME.EXT.
func diffGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

func TestDiffGolden(t *testing.T) {
	for _, name := range []string{"regression", "pass", "report", "replication"} {
		t.Run(name, func(t *testing.T) {
			res := diffCase(t, name)
			var text, md, js, junit bytes.Buffer
			if err := WriteDiffText(&text, res, DiffOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := WriteDiffMarkdown(&md, res, DiffOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := WriteDiffJSON(&js, res); err != nil {
				t.Fatal(err)
			}
			if err := WriteDiffJUnit(&junit, res); err != nil {
				t.Fatal(err)
			}
			diffGolden(t, "diff_"+name+".txt", text.Bytes())
			diffGolden(t, "diff_"+name+".md", md.Bytes())
			diffGolden(t, "diff_"+name+".json", js.Bytes())
			diffGolden(t, "diff_"+name+".xml", junit.Bytes())
		})
	}
}

// TestDiffJSONContract checks the stable paths of docs/design.md §11 on a parsed
// document, independent of the golden bytes.
func TestDiffJSONContract(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteDiffJSON(&buf, diffCase(t, "regression")); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema"] != "llmprof.diff/v1" {
		t.Errorf("schema %v", doc["schema"])
	}
	if v := doc["gate"].(map[string]any)["verdict"]; v != "fail" {
		t.Errorf("gate.verdict %v, want fail", v)
	}
	metrics := doc["metrics"].([]any)
	gated := 0
	for _, mi := range metrics {
		m := mi.(map[string]any)
		for _, k := range []string{"name", "baseline", "candidate", "delta_pct", "ci_low_pct", "ci_high_pct", "p", "mde_pct", "explanation"} {
			if _, ok := m[k]; !ok {
				t.Errorf("metric %v lacks %q", m["name"], k)
			}
		}
		if v, ok := m["verdict"]; ok {
			gated++
			if v != "pass" && v != "fail" && v != "inconclusive" {
				t.Errorf("metric %v: verdict %v", m["name"], v)
			}
		}
		for _, ei := range m["explanation"].([]any) {
			e := ei.(map[string]any)
			if _, ok := e["bucket"].(string); !ok {
				t.Errorf("explanation entry without bucket: %v", e)
			}
			if _, ok := e["delta_ms"].(float64); !ok {
				t.Errorf("explanation entry without delta_ms: %v", e)
			}
		}
	}
	if gated != 5 {
		t.Errorf("%d metrics with a verdict, want the 5 gated ones", gated)
	}
}

func TestDiffJUnitIsValidXML(t *testing.T) {
	for _, name := range []string{"regression", "replication"} {
		var buf bytes.Buffer
		res := diffCase(t, name)
		if err := WriteDiffJUnit(&buf, res); err != nil {
			t.Fatal(err)
		}
		var doc junitSuites
		if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantFail := res.Gate.Fail
		wantSkip := res.Gate.Inconclusive
		if res.Gate.FailOnInconclusive {
			wantFail, wantSkip = wantFail+wantSkip, 0
		}
		rules := res.Gate.Pass + res.Gate.Fail + res.Gate.Inconclusive
		if doc.Tests != rules || doc.Failures != wantFail || doc.Skipped != wantSkip || len(doc.Suites[0].Cases) != rules {
			t.Errorf("%s: tests %d failures %d skipped %d, want %d %d %d", name, doc.Tests, doc.Failures, doc.Skipped, rules, wantFail, wantSkip)
		}
	}
}

func TestDiffTextColour(t *testing.T) {
	res := diffCase(t, "regression")
	var plain, colour bytes.Buffer
	if err := WriteDiffText(&plain, res, DiffOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteDiffText(&colour, res, DiffOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain.Bytes(), []byte("\x1b[")) {
		t.Error("plain output contains ANSI escapes")
	}
	if !bytes.Contains(colour.Bytes(), []byte("\x1b[")) {
		t.Error("colour output has no ANSI escapes")
	}
}
