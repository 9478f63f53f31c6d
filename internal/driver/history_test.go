package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/compare/comparetest"
	"github.com/llmprof/llmprof/history"
	"github.com/llmprof/llmprof/internal/browser"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/report"
)

// These tests take diff and history through the driver, as the commands
// run them (cmd/llmprof/diff.go, history.go), rendering with report's
// writers; cmd/llmprof tests their flags and exit codes.

// diffOptions completes o with diff's flag defaults, and unless o sets
// them 300 bootstrap replicates (--bootstrap=300) to keep the tests quick.
func diffOptions(o DiffOptions) DiffOptions {
	def := compare.DefaultOptions()
	o.Alpha, o.Seed, o.Workload = def.Alpha, def.Seed, def.Workload
	if o.Reps == 0 {
		o.Reps = 300
	}
	if o.Block == "" {
		o.Block = "detect"
	}
	if o.Inconclusive == "" {
		o.Inconclusive = "pass"
	}
	if o.Order == "" {
		o.Order = compare.OrderAuto
	}
	return o
}

// diffJSON runs Diff with o (diffOptions' defaults) and returns the result
// and its JSON report (diff -f json).
func diffJSON(t *testing.T, o DiffOptions) (*compare.Result, []byte) {
	t.Helper()
	res, err := Diff(context.Background(), diffOptions(o))
	if err != nil {
		t.Fatalf("%+v: %v", o, err)
	}
	var b bytes.Buffer
	if err := report.WriteDiffJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	return res, b.Bytes()
}

// runHistory runs History with o and history's flag defaults.
func runHistory(t *testing.T, o HistoryOptions) (*history.Result, []string) {
	t.Helper()
	def := history.DefaultOptions()
	o.Detect = def.Detect
	if o.Order == "" {
		o.Order = history.OrderAuto
	}
	if o.Unit == "" {
		o.Unit = history.UnitAuto
	}
	res, warnings, err := History(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res, warnings
}

// historyJSON is history -f json of res.
func historyJSON(t *testing.T, res *history.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := report.WriteHistoryJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// analysis wraps runs as a saved analysis (analyze --format json).
func analysis(samples any) map[string]any {
	return map[string]any{"schema": "llmprof.report/v1", "requests": map[string]any{"count": 1}, "samples": samples}
}

func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, b)
}

// nightlyDir copies the real nightly bench results of
// ../shared/testdata/vllm-bench/ named by nights (01 TP 8; 02, 03, 04
// TP 4 × PP 2, an A/A set) into a directory as NN.json, beside a README that
// is not a run; it returns the directory.
func nightlyDir(t *testing.T, nights ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range nights {
		writeFile(t, dir, n+".json", nightly(t, n))
	}
	writeFile(t, dir, "README.txt", []byte("nightly results\n"))
	return dir
}

// nightly reads night NN's per-request bench result.
func nightly(t *testing.T, night string) []byte {
	t.Helper()
	files := shareddata.Glob(t, "testdata/vllm-bench/surajssd-llm-k8s-"+night+"_*qps_04.json")
	if len(files) != 1 {
		t.Fatalf("night %s: %d files", night, len(files))
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type diffHistoryDoc struct {
	Unit     string
	Baseline struct {
		Runs   int
		RunIDs []string `json:"run_ids"`
	}
	Metrics []struct {
		Name, Verdict, Method string
		Baseline, Candidate   float64
		DeltaPct              float64 `json:"delta_pct"`
		NBaseline             int     `json:"n_baseline"`
	}
	Gate struct {
		Verdict string
	}
	Warnings        []string
	InputWarnings   []string `json:"input_warnings"`
	BaselineHistory *struct {
		Order  string
		Runs   []string
		From   int
		Change *struct {
			Index   int
			Metrics []string
		}
	} `json:"baseline_history"`
}

// diffHistory runs diff with o and decodes its JSON report; failed is
// whether the gate must fail.
func diffHistory(t *testing.T, failed bool, o DiffOptions) diffHistoryDoc {
	t.Helper()
	res, b := diffJSON(t, o)
	var doc diffHistoryDoc
	if err := json.Unmarshal(b, &doc); err != nil || res.Gate.Failed != failed {
		t.Fatalf("%+v: gate failed %v (want %v), %v", o, res.Gate.Failed, failed, err)
	}
	return doc
}

func (d diffHistoryDoc) metric(t *testing.T, name string) (verdict string, base, cand, pct float64) {
	t.Helper()
	for _, m := range d.Metrics {
		if m.Name == name {
			return m.Verdict, m.Baseline, m.Candidate, m.DeltaPct
		}
	}
	t.Fatalf("no %s", name)
	return
}

func (d diffHistoryDoc) baselineNights() []string {
	var out []string
	for _, id := range d.Baseline.RunIDs {
		out = append(out, strings.TrimSuffix(filepath.Base(strings.Fields(id)[0]), ".json"))
	}
	return out
}

// TestDiffBaselineHistoryNightly: the real nightly bench results as a
// baseline history — read as `history` reads them (a directory of bench
// results with a README, no <baseline> argument), the runs the replication
// unit.
//   - 02 and 03 (TP 4 × PP 2) against 04, the same setup: itl.p50 within a
//     fraction of a percent, the gate itl.p50<+10% passes.
//   - 02, 03, 04 against 01 (TP 8, ITL about half): every latency rule that
//     forbids a 10% drop fails and the rules the change keeps pass, five rules
//     at once (Holm), throughput +25%.
//   - 01 then 02, 03 against 04: the history has its change point at 02, so
//     the baseline is 02 and 03 only (the report says so); with 01 in it the
//     baseline's ITL would be a third lower and the gate could not pass.
func TestDiffBaselineHistoryNightly(t *testing.T) {
	d04 := writeFile(t, t.TempDir(), "04.json", nightly(t, "04"))
	d01 := writeFile(t, t.TempDir(), "01.json", nightly(t, "01"))

	aa := diffHistory(t, false, DiffOptions{History: []string{nightlyDir(t, "02", "03")}, Candidate: []string{d04}, Gates: []string{"itl.p50<+10%"}})
	verdict, base, cand, pct := aa.metric(t, "itl.p50")
	if aa.Unit != "run (baseline history)" || aa.Baseline.Runs != 2 || verdict != "pass" || aa.Gate.Verdict != "pass" || pct < -2 || pct > 2 {
		t.Errorf("A/A: unit %q, %d baseline runs, itl.p50 %.2f → %.2f ms (%+.2f%%), %s", aa.Unit, aa.Baseline.Runs, base, cand, pct, verdict)
	}
	if !slices.ContainsFunc(aa.InputWarnings, func(w string) bool { return strings.Contains(w, "README.txt: skipped, not a run") }) {
		t.Errorf("the README is not named: %q", aa.InputWarnings)
	}
	if !slices.ContainsFunc(aa.Warnings, func(w string) bool { return strings.Contains(w, "2 runs in time order, no change point") }) {
		t.Errorf("no word on the baseline history: %q", aa.Warnings)
	}

	tp8 := diffHistory(t, true, DiffOptions{History: []string{nightlyDir(t, "02", "03", "04")}, Candidate: []string{d01},
		Gates: []string{"itl.p50>-10%", "ttft.p50>-10%", "itl.p90>-10%", "tpot.p50<+5%", "throughput>-5%"}})
	want := map[string]string{"itl.p50": "fail", "ttft.p50": "fail", "itl.p90": "fail", "tpot.p50": "pass", "throughput": "pass"}
	for name, w := range want {
		if v, base, cand, pct := tp8.metric(t, name); v != w {
			t.Errorf("TP 8 against 02–04: %s %.4g → %.4g (%+.1f%%) %s, want %s", name, base, cand, pct, v, w)
		}
	}
	if _, _, _, pct := tp8.metric(t, "itl.p50"); tp8.Baseline.Runs != 3 || pct > -45 || pct < -58 {
		t.Errorf("TP 8 against 02–04: %d baseline runs, itl.p50 %+.1f%% (about −52%%)", tp8.Baseline.Runs, pct)
	}

	stepped := diffHistory(t, false, DiffOptions{History: []string{nightlyDir(t, "01", "02", "03")}, Candidate: []string{d04}, Gates: []string{"itl.p50<+10%"}})
	verdict, base, _, pct = stepped.metric(t, "itl.p50")
	if got := stepped.baselineNights(); !slices.Equal(got, []string{"02", "03"}) || verdict != "pass" || base < 55 || base > 58 || pct < -2 || pct > 2 {
		t.Errorf("01, 02, 03: baseline %v, itl.p50 baseline %.2f ms (%+.2f%%), %s; want 02 and 03 only, ≈ 56 ms, pass", got, base, pct, verdict)
	}
	if !slices.ContainsFunc(stepped.Warnings, func(w string) bool {
		return strings.Contains(w, "change point at run 2") && strings.Contains(w, "the baseline is the 2 run(s) from run 2 on") && strings.Contains(w, "the 1 before are left out")
	}) {
		t.Errorf("the report does not say the runs before the change were left out: %q", stepped.Warnings)
	}
	if h := stepped.BaselineHistory; h == nil || h.Order != "time" || len(h.Runs) != 3 || h.From != 1 || h.Change == nil || h.Change.Index != 1 || !slices.Contains(h.Change.Metrics, "itl.p50") {
		t.Errorf("baseline_history %+v", h)
	}
	if h := aa.BaselineHistory; h == nil || h.From != 0 || h.Change != nil || len(h.Runs) != 2 {
		t.Errorf("A/A baseline_history %+v", h)
	}
}

// TestDiffBaselineHistoryIsHistory: diff's baseline history is the series
// `llmprof history` reads — the same skipped files in the same words, the
// same order and the same change point — whether named with
// --baseline-history or as the <baseline> directory of one candidate; the
// candidate, found in the history, is left out of it; a <baseline> beside
// --baseline-history is its newest run.
func TestDiffBaselineHistoryIsHistory(t *testing.T) {
	dir := nightlyDir(t, "01", "02", "03", "04")
	writeFile(t, dir, "benchmark_results.json", []byte(`[{"Test name": "serving_llama70B_tp8_sharegpt_qps_04", "Median TTFT (ms)": 49.5}]`))
	res, _ := runHistory(t, HistoryOptions{Paths: []string{dir}, Metrics: []string{"itl.p50"}})
	var hist struct {
		Order    string
		Runs     []struct{ ID string }
		Warnings []string
		Metrics  []struct {
			Name    string
			Changes []struct{ Index int }
		}
	}
	if err := json.Unmarshal(historyJSON(t, res), &hist); err != nil {
		t.Fatal(err)
	}
	if len(hist.Metrics) != 1 || len(hist.Metrics[0].Changes) != 1 || hist.Metrics[0].Changes[0].Index != 1 {
		t.Fatalf("history: %+v", hist.Metrics)
	}
	cand := filepath.Join(dir, "04.json")
	for _, args := range []DiffOptions{{History: []string{dir}}, {Baseline: []string{dir}}} {
		args.Candidate, args.Gates = []string{cand}, []string{"itl.p50<+10%"}
		doc := diffHistory(t, false, args)
		for _, w := range hist.Warnings {
			if !slices.Contains(doc.InputWarnings, w) {
				t.Errorf("%+v: history warns %q, diff does not: %q", args, w, doc.InputWarnings)
			}
		}
		if len(doc.InputWarnings) != len(hist.Warnings) {
			t.Errorf("%+v: diff warns %q, history %q", args, doc.InputWarnings, hist.Warnings)
		}
		if got := doc.baselineNights(); !slices.Equal(got, []string{"02", "03"}) {
			t.Errorf("%+v: baseline %v, want 02, 03 (04 is the candidate, 01 before the change)", args, got)
		}
		if !slices.ContainsFunc(doc.Warnings, func(w string) bool {
			return strings.Contains(w, "04.json: the candidate, left out of the baseline history")
		}) {
			t.Errorf("%+v: the candidate's exclusion is not said: %q", args, doc.Warnings)
		}
	}

	// 02 and 03 as the history, 04 as <baseline> (the newest), 01 the
	// candidate; --order name puts the history in file order.
	newest := diffHistory(t, false, DiffOptions{Order: "name", History: []string{nightlyDir(t, "03", "02")}, Baseline: []string{filepath.Join(dir, "04.json")}, Candidate: []string{filepath.Join(dir, "01.json")}})
	if got := newest.baselineNights(); !slices.Equal(got, []string{"02", "03", "04"}) {
		t.Errorf("history then <baseline>: %v", got)
	}
	var oe *OptionError
	if _, err := Diff(context.Background(), diffOptions(DiffOptions{Order: "sideways", History: []string{dir}, Candidate: []string{filepath.Join(dir, "01.json")}})); !errors.As(err, &oe) || !strings.Contains(err.Error(), `unknown order "sideways"`) {
		t.Errorf("--order sideways: %v, want an *OptionError", err)
	}
}

// nightlies writes ten saved analyses, one per night, each carrying its
// night's timestamp; from night stepAt on (0-based; -1 none) attention
// kernels take 1.5× as long (TPOT about +15%). The files are named in
// reverse so that only the timestamps put them in order. 150 requests a
// night, half the CPU of the 300 LLMPROF_LONG=1 writes: the step is found
// at the same night, p 0.002 either way, +13.9% (interval from +10.7%)
// against +14.2% (+12.3%), within TestHistoryGateAndExplanation's
// unchanged bounds.
func nightlies(t *testing.T, stepAt int) string {
	t.Helper()
	dir := t.TempDir()
	day := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	requests := 150
	if os.Getenv("LLMPROF_LONG") != "" {
		requests = 300
	}
	for i := range 10 {
		w := comparetest.Workload{Requests: requests, Seed: uint64(100 + i)}
		if stepAt >= 0 && i >= stepAt {
			w.AttentionFactor = 1.5
		}
		doc := analysis(w.Run())
		doc["timestamp"] = day.AddDate(0, 0, i).Format(time.RFC3339)
		writeJSON(t, dir, fmt.Sprintf("z%02d.json", 10-i), doc)
	}
	return dir
}

type historyDoc struct {
	Schema  string
	Order   string
	Runs    []struct{ ID string }
	Metrics []struct {
		Name    string
		Points  string
		Changes []struct {
			Index       int
			P           float64
			DeltaPct    *float64 `json:"delta_pct"`
			CILowPct    *float64 `json:"ci_low_pct"`
			Unit        string   `json:"replication_unit"`
			Explanation []struct{ Bucket string }
		}
	}
	Gate struct {
		Failed bool
		Rules  []struct{ Rule, Verdict string }
	}
}

// TestHistoryGateAndExplanation: over ten nights whose attention kernels
// slow down from night 7, tpot.p50 has one change point, at night 7, sized
// by comparing nights 1–6 with 7–10 as runs, explained first by
// token.gpu.attention; the gate on tpot.p50 < +5% fails (exit 3). Without
// the slowdown there is no change and the gate passes.
func TestHistoryGateAndExplanation(t *testing.T) {
	dir := nightlies(t, 6)
	res, _ := runHistory(t, HistoryOptions{Paths: []string{dir}, Metrics: []string{"tpot.p50", "ttft.p50"}, Gates: []string{"tpot.p50<+5%"}})
	if s := HistoryGateSummary(res); !res.Gate.Failed || !strings.Contains(s, "tpot.p50 < +5% at run 7") {
		t.Errorf("gate failed %v: %s", res.Gate.Failed, s)
	}
	var doc historyDoc
	if err := json.Unmarshal(historyJSON(t, res), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "llmprof.history/v1" || doc.Order != "time" || len(doc.Runs) != 10 || !strings.HasSuffix(doc.Runs[0].ID, "z10.json") {
		t.Fatalf("schema %q order %q runs %v", doc.Schema, doc.Order, doc.Runs)
	}
	found := false
	for _, m := range doc.Metrics {
		if m.Name != "tpot.p50" {
			continue
		}
		found = true
		if m.Points != "request" || len(m.Changes) != 1 || m.Changes[0].Index != 6 {
			t.Fatalf("tpot.p50: points %s, changes %+v; want one at index 6", m.Points, m.Changes)
		}
		c := m.Changes[0]
		if c.DeltaPct != nil && c.CILowPct != nil {
			t.Logf("tpot.p50 changes at night 7: p %.3g, %+.1f%% (interval from %+.1f%%)", c.P, *c.DeltaPct, *c.CILowPct)
		}
		if c.P > 0.01 || c.Unit != "run" || c.DeltaPct == nil || *c.DeltaPct < 8 || *c.CILowPct <= 5 {
			t.Errorf("change: p %v unit %q delta %v low %v", c.P, c.Unit, c.DeltaPct, c.CILowPct)
		}
		if len(c.Explanation) == 0 || c.Explanation[0].Bucket != "gpu.attention" {
			t.Errorf("explanation %+v, want gpu.attention first", c.Explanation)
		}
	}
	if !found || !doc.Gate.Failed || len(doc.Gate.Rules) != 1 || doc.Gate.Rules[0].Verdict != "fail" {
		t.Errorf("tpot.p50 found %v, gate %+v", found, doc.Gate)
	}

	res, _ = runHistory(t, HistoryOptions{Paths: []string{nightlies(t, -1)}, Metrics: []string{"tpot.p50"}, Gates: []string{"tpot.p50<+5%"}})
	var out strings.Builder
	if err := report.WriteHistoryText(&out, res); err != nil || res.Gate.Failed || !strings.Contains(out.String(), "no change point") || !strings.Contains(out.String(), "gate on the newest run: PASS") {
		t.Errorf("flat nights: gate failed %v, %v\n%s", res.Gate.Failed, err, out.String())
	}
}

// TestHistoryVLLMBenchHTML: the four real nightly bench results, named in
// any order, give Markdown with the step at run 2 and an offline page with
// one chart per metric, one dashed change line per change point, and no
// errors in a browser.
func TestHistoryVLLMBenchHTML(t *testing.T) {
	files := shareddata.Glob(t, "testdata/vllm-bench/surajssd-llm-k8s-0[1-4]_*qps_04.json")
	page := filepath.Join(t.TempDir(), "history.html")
	res, _ := runHistory(t, HistoryOptions{Paths: []string{files[3], files[1], files[0], files[2]}})
	var md, html bytes.Buffer
	if err := report.WriteHistoryMarkdown(&md, res); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteHistoryHTML(&html, res); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	writeFile(t, filepath.Dir(page), filepath.Base(page), html.Bytes())
	for _, want := range []string{"| itl.p50 | 2 (2025-04-14 15:21) |", "| ttft.p50 | 2 ", "throughput: not tested"} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| itl.p50 | 3") || strings.Contains(out, "| itl.p50 | 4") {
		t.Errorf("a change among 02–04:\n%s", out)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	charts := browser.SVGCharts(t, b)
	text := string(b)
	rows := strings.Count(text[strings.Index(text, `<section id="changes"`):strings.Index(text, `<section id="runs"`)], `<tr><th scope="row"`)
	// Eight metrics (TPOT and E2E derived from ttfts and itls); the six
	// latency ones change at run 02, the two throughputs cannot be tested
	// on four runs.
	if len(charts) != 8 || rows != 6 || strings.Count(text, `class="change"`) != rows {
		t.Errorf("%d charts (want 8 metrics), %d change rows (want 6), %d change lines", len(charts), rows, strings.Count(text, `class="change"`))
	}
	if n := strings.Count(text, `class="level"`); n != 2*6+2 {
		t.Errorf("%d level lines, want two per changed metric and one per other", n)
	}
	if s := strings.ReplaceAll(text, `xmlns="http://www.w3.org/2000/svg"`, ""); strings.Contains(s, "http://") || strings.Contains(s, "https://") {
		t.Error("the page refers to the network")
	}
	browser.RenderedCleanly(t, page, "the history page")
}

// TestDiffGate: the gate's verdicts from flags and a gate file — a
// regression fails, an unchanged run passes, an identical copy never
// passes, a rule on a metric no side has fails unless allowed, and an
// inconclusive rule passes unless the flags or the gate file say it fails
// — each with what the text report and the one stderr line
// (GateSummary) say.
func TestDiffGate(t *testing.T) {
	dir := t.TempDir()
	base := writeJSON(t, dir, "base.json", analysis(comparetest.Workload{Requests: 400, Seed: 1}.Run()))
	same := writeJSON(t, dir, "same.json", analysis(comparetest.Workload{Requests: 400, Seed: 3}.Run()))
	cp := writeJSON(t, dir, "copy.json", analysis(comparetest.Workload{Requests: 400, Seed: 1}.Run()))
	slow := writeJSON(t, dir, "slow.json", analysis(comparetest.Workload{Requests: 400, Seed: 2, AttentionFactor: 1.5}.Run()))
	gateFile := writeFile(t, dir, "gate.yaml", []byte("gates:\n  - tpot.p50 < +5%\n  - ttft.p99 < +200%\n"))
	strictFile := writeFile(t, dir, "strict.yaml", []byte("gates: ['throughput > -5%']\nfail_on_inconclusive: true\n"))
	throughput := []string{"throughput>-5%"}
	for _, tc := range []struct {
		name    string
		o       DiffOptions
		failed  bool
		text    string
		summary string
	}{
		{"regression fails the gate", DiffOptions{Candidate: []string{slow}, Gates: []string{"tpot.p50<+5%"}}, true, "FAIL", "gate failed: 1 of 1 rules failed (tpot.p50 < +5%)"},
		{"unchanged run passes", DiffOptions{Candidate: []string{same}, Gates: []string{"tpot.p50<+5%", "ttft.p50<+10%"}}, false, "gate: PASS", ""},
		{"identical copy never passes", DiffOptions{Candidate: []string{cp}, Gates: []string{"tpot.p50<+5%"}}, false, "identical samples", ""},
		{"missing metric fails", DiffOptions{Candidate: []string{same}, Gates: []string{"tenant.ghost<+1ms"}}, true, "FAIL", "gate failed"},
		{"missing metric allowed", DiffOptions{Candidate: []string{same}, Gates: []string{"tenant.ghost<+1ms"}, AllowMissing: true}, false, "INCONCLUSIVE", ""},
		{"no gate is a report", DiffOptions{Candidate: []string{slow}}, false, "no gate rules", ""},
		{"gate file", DiffOptions{Candidate: []string{slow}, GateFile: gateFile}, true, "tpot.p50 < +5%", "gate failed"},
		{"inconclusive passes by default", DiffOptions{Candidate: []string{same}, Gates: throughput}, false, "INCONCLUSIVE", ""},
		{"inconclusive fails when asked", DiffOptions{Candidate: []string{same}, Gates: throughput, FailOnInconclusive: true}, true, "INCONCLUSIVE", "inconclusive under --fail-on-inconclusive"},
		{"--inconclusive fail", DiffOptions{Candidate: []string{same}, Gates: throughput, Inconclusive: "fail"}, true, "INCONCLUSIVE", "inconclusive under --fail-on-inconclusive"},
		{"--inconclusive pass", DiffOptions{Candidate: []string{same}, Gates: throughput, Inconclusive: "pass"}, false, "INCONCLUSIVE", ""},
		{"inconclusive fails from the gate file", DiffOptions{Candidate: []string{same}, GateFile: strictFile}, true, "", "throughput > -5%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Baseline = []string{base}
			res, _ := diffJSON(t, tc.o)
			var text strings.Builder
			if err := report.WriteDiffText(&text, res, report.DiffOptions{}); err != nil {
				t.Fatal(err)
			}
			if res.Gate.Failed != tc.failed || !strings.Contains(text.String(), tc.text) {
				t.Errorf("gate failed %v, want %v; text lacks %q?\n%s", res.Gate.Failed, tc.failed, tc.text, text.String())
			}
			if s := GateSummary(res); tc.failed && !strings.Contains(s, tc.summary) {
				t.Errorf("summary %q lacks %q", s, tc.summary)
			}
		})
	}
}

// TestDiffSavedAnalysesHistory: a directory of saved analyses is a baseline
// history, whether it is the <baseline> of one candidate run or named with
// --baseline-history. 200 requests a run (400 cost twice the CPU): what is
// checked is the unit the history gives, not a verdict's power.
func TestDiffSavedAnalysesHistory(t *testing.T) {
	dir := t.TempDir()
	base := writeJSON(t, dir, "base.json", analysis(comparetest.Workload{Requests: 200, Seed: 1}.Run()))
	same := writeJSON(t, dir, "same.json", analysis(comparetest.Workload{Requests: 200, Seed: 3}.Run()))
	hist := filepath.Join(dir, "history")
	if err := os.Mkdir(hist, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range uint64(4) {
		writeJSON(t, hist, fmt.Sprintf("b%d.json", i), analysis(comparetest.Workload{Requests: 200, Seed: 30 + i}.Run()))
	}
	for _, o := range []DiffOptions{{Baseline: []string{hist}}, {Baseline: []string{base}, History: []string{hist}}} {
		o.Candidate, o.Gates = []string{same}, []string{"tpot.p50<+5%"}
		res, b := diffJSON(t, o)
		var doc struct {
			Unit string `json:"unit"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || res.Gate.Failed || !strings.Contains(doc.Unit, "history") {
			t.Errorf("%+v: gate failed %v, unit %q, %v", o, res.Gate.Failed, doc.Unit, err)
		}
	}
}
