package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/shareddata"
)

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

func diffHistory(t *testing.T, wantCode int, args ...string) diffHistoryDoc {
	t.Helper()
	code, stdout, stderr := runLLMProf(t, append([]string{"diff", fast, "-f", "json"}, args...)...)
	var doc diffHistoryDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != wantCode {
		t.Fatalf("%v: exit %d (want %d), %v; %s", args, code, wantCode, err, stderr)
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

	aa := diffHistory(t, ExitOK, "--baseline-history", nightlyDir(t, "02", "03"), d04, "--gate", "itl.p50<+10%")
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

	tp8 := diffHistory(t, ExitRegression, "--baseline-history", nightlyDir(t, "02", "03", "04"), d01,
		"--gate", "itl.p50>-10%", "--gate", "ttft.p50>-10%", "--gate", "itl.p90>-10%", "--gate", "tpot.p50<+5%", "--gate", "throughput>-5%")
	want := map[string]string{"itl.p50": "fail", "ttft.p50": "fail", "itl.p90": "fail", "tpot.p50": "pass", "throughput": "pass"}
	for name, w := range want {
		if v, base, cand, pct := tp8.metric(t, name); v != w {
			t.Errorf("TP 8 against 02–04: %s %.4g → %.4g (%+.1f%%) %s, want %s", name, base, cand, pct, v, w)
		}
	}
	if _, _, _, pct := tp8.metric(t, "itl.p50"); tp8.Baseline.Runs != 3 || pct > -45 || pct < -58 {
		t.Errorf("TP 8 against 02–04: %d baseline runs, itl.p50 %+.1f%% (about −52%%)", tp8.Baseline.Runs, pct)
	}

	stepped := diffHistory(t, ExitOK, "--baseline-history", nightlyDir(t, "01", "02", "03"), d04, "--gate", "itl.p50<+10%")
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
	code, stdout, stderr := runLLMProf(t, "history", "-f", "json", "--metric", "itl.p50", dir)
	var hist struct {
		Order    string
		Runs     []struct{ ID string }
		Warnings []string
		Metrics  []struct {
			Name    string
			Changes []struct{ Index int }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &hist); err != nil || code != ExitOK {
		t.Fatalf("history: exit %d, %v; %s", code, err, stderr)
	}
	if len(hist.Metrics) != 1 || len(hist.Metrics[0].Changes) != 1 || hist.Metrics[0].Changes[0].Index != 1 {
		t.Fatalf("history: %+v", hist.Metrics)
	}
	cand := filepath.Join(dir, "04.json")
	for _, args := range [][]string{{"--baseline-history", dir, cand}, {dir, cand}} {
		doc := diffHistory(t, ExitOK, append(args, "--gate", "itl.p50<+10%")...)
		for _, w := range hist.Warnings {
			if !slices.Contains(doc.InputWarnings, w) {
				t.Errorf("%v: history warns %q, diff does not: %q", args, w, doc.InputWarnings)
			}
		}
		if len(doc.InputWarnings) != len(hist.Warnings) {
			t.Errorf("%v: diff warns %q, history %q", args, doc.InputWarnings, hist.Warnings)
		}
		if got := doc.baselineNights(); !slices.Equal(got, []string{"02", "03"}) {
			t.Errorf("%v: baseline %v, want 02, 03 (04 is the candidate, 01 before the change)", args, got)
		}
		if !slices.ContainsFunc(doc.Warnings, func(w string) bool {
			return strings.Contains(w, "04.json: the candidate, left out of the baseline history")
		}) {
			t.Errorf("%v: the candidate's exclusion is not said: %q", args, doc.Warnings)
		}
	}

	// 02 and 03 as the history, 04 as <baseline> (the newest), 01 the
	// candidate; --order name puts the history in file order.
	newest := diffHistory(t, ExitOK, "--order", "name", "--baseline-history", nightlyDir(t, "03", "02"), filepath.Join(dir, "04.json"), filepath.Join(dir, "01.json"))
	if got := newest.baselineNights(); !slices.Equal(got, []string{"02", "03", "04"}) {
		t.Errorf("history then <baseline>: %v", got)
	}
	if code, _, stderr := runLLMProf(t, "diff", "--order", "sideways", "--baseline-history", dir, filepath.Join(dir, "01.json")); code != ExitUsage || !strings.Contains(stderr, `unknown order "sideways"`) {
		t.Errorf("--order sideways: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runLLMProf(t, "diff", cand); code != ExitUsage || !strings.Contains(stderr, "missing <baseline> and <candidate>") {
		t.Errorf("one argument without --baseline-history: exit %d, %s", code, stderr)
	}
}
