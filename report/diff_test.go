package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
		gates = []string{"tpot.p50<+5%", "itl.p50<+5%", "ttft.p50<+10%"}
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

// TestDiffJSONContract checks the stable paths of docs/diff.md on a parsed
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

// TestDiffGoldenChangeIsChangeOfValues reads the golden outputs back: in
// every row the change column is the change of the two values printed
// beside it (issue 14: "p50" is the change of the median, not a shift), and
// every explanation points the way its metric moved or says "mixed".
func TestDiffGoldenChangeIsChangeOfValues(t *testing.T) {
	num := func(s string) (float64, bool) {
		s = strings.TrimSpace(s)
		end := 0
		for end < len(s) && strings.ContainsRune("+-.0123456789", rune(s[end])) {
			end++
		}
		v, err := strconv.ParseFloat(s[:end], 64)
		return v, err == nil
	}
	split := regexp.MustCompile(`\s{2,}`)
	total := 0
	defer func() {
		if total < 30 {
			t.Errorf("only %d rows with a change checked", total)
		}
	}()
	for _, name := range []string{"regression", "pass", "report", "replication"} {
		b, err := os.ReadFile(filepath.Join("testdata", "diff_"+name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for _, line := range strings.Split(string(b), "\n") {
			f := split.Split(strings.TrimSpace(line), -1)
			if len(f) < 4 || compare.ValidMetric(f[0]) != nil {
				continue
			}
			vb, ok1 := num(f[1])
			vc, ok2 := num(f[2])
			ch, ok3 := num(strings.Trim(f[3], "()%"))
			if !ok1 || !ok2 || !ok3 || vb == 0 {
				continue // "—" (a shift has no values) or "~"
			}
			rows++
			want := 100 * (vc/vb - 1)
			// Printed values carry 3–4 significant digits, the change 0.1.
			if tol := 0.06 + 100*(math.Abs(vc/vb))*(0.5e-2/math.Abs(vb)+0.5e-2/math.Abs(vc)); math.Abs(ch-want) > tol {
				t.Errorf("%s: %s: %s → %s printed as %s, the values' change is %+.2f%%", name, f[0], f[1], f[2], f[3], want)
			}
		}
		total += rows

		var doc struct {
			Metrics []struct {
				Name        string   `json:"name"`
				Baseline    *float64 `json:"baseline"`
				Candidate   *float64 `json:"candidate"`
				DeltaPct    *float64 `json:"delta_pct"`
				Mixed       bool     `json:"mixed"`
				Explanation []struct {
					DeltaMS float64 `json:"delta_ms"`
				} `json:"explanation"`
			} `json:"metrics"`
		}
		jb, err := os.ReadFile(filepath.Join("testdata", "diff_"+name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(jb, &doc); err != nil {
			t.Fatal(err)
		}
		for _, m := range doc.Metrics {
			if m.Baseline != nil && m.Candidate != nil && m.DeltaPct != nil && *m.Baseline != 0 {
				// JSON numbers carry 6 significant digits and 6 decimals.
				b, c := *m.Baseline, *m.Candidate
				tol := 1e-3*math.Max(1, math.Abs(*m.DeltaPct)) + 100*math.Abs(c/b)*(1e-6/math.Abs(b)+1e-6/math.Max(math.Abs(c), 1e-9))
				if want := 100 * (c/b - 1); math.Abs(*m.DeltaPct-want) > tol {
					t.Errorf("%s: %s: delta_pct %v, the values' change %v", name, m.Name, *m.DeltaPct, want)
				}
			}
			if len(m.Explanation) > 0 && m.DeltaPct != nil && *m.DeltaPct != 0 && !m.Mixed {
				if (m.Explanation[0].DeltaMS > 0) != (*m.DeltaPct > 0) {
					t.Errorf("%s: %s changed %+.2f%% but its explanation leads with %+.3f ms and does not say mixed", name, m.Name, *m.DeltaPct, m.Explanation[0].DeltaMS)
				}
			}
		}
	}
}

// Issue 22: no format prints an infinite interval. An interval unbounded on
// both sides reads "too few", on one side as its one bound; the HTML table
// had printed "-Inf% … +Inf%".
func TestDiffNoInfinity(t *testing.T) {
	res := diffCase(t, "pass")
	res.Metrics[0].CILowPct, res.Metrics[0].CIHighPct = math.Inf(-1), math.Inf(1)
	res.Metrics[1].CILowPct = math.Inf(-1)
	res.Metrics[2].CIHighPct = math.Inf(1)
	if got, want := fmtCI(res.Metrics[1]), "≤ "+fmtPct(res.Metrics[1].CIHighPct); got != want {
		t.Errorf("one-sided interval reads %q, want %q", got, want)
	}
	for _, f := range DiffFormats {
		var b bytes.Buffer
		if err := f.Write(&b, res, DiffOptions{}); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		s := regexp.MustCompile(`(?s)<script.*?</script>`).ReplaceAllString(b.String(), "")
		if strings.Contains(s, "Inf") || strings.Contains(s, "∞") {
			i := max(strings.Index(s, "Inf"), strings.Index(s, "∞"))
			t.Errorf("%s prints an infinity: …%s…", f.Name, s[max(0, i-80):min(len(s), i+40)])
		}
	}
}
