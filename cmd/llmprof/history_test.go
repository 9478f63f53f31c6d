package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/internal/browser"

	"github.com/llmprof/llmprof/compare/comparetest"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// nightlies writes ten saved analyses, one per night, each carrying its
// night's timestamp; from night stepAt on (0-based; -1 none) attention
// kernels take 1.5× as long (TPOT about +15%). The files are named in
// reverse so that only the timestamps put them in order.
func nightlies(t *testing.T, stepAt int) string {
	t.Helper()
	dir := t.TempDir()
	day := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	for i := range 10 {
		w := comparetest.Workload{Requests: 300, Seed: uint64(100 + i)}
		if stepAt >= 0 && i >= stepAt {
			w.AttentionFactor = 1.5
		}
		doc := analysis(w.Run())
		doc["timestamp"] = day.AddDate(0, 0, i).Format(time.RFC3339)
		writeJSON(t, dir, fmt.Sprintf("z%02d.json", 10-i), doc)
	}
	return dir
}

type historyJSON struct {
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
	code, out, stderr := runLLMProf(t, "history", dir, "--format", "json", "--metric", "tpot.p50", "--metric", "ttft.p50", "--gate", "tpot.p50<+5%")
	if code != ExitRegression {
		t.Fatalf("exit %d, want %d: %s", code, ExitRegression, stderr)
	}
	if !strings.Contains(stderr, "tpot.p50 < +5% at run 7") {
		t.Errorf("stderr: %s", stderr)
	}
	var doc historyJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
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

	code, out, stderr = runLLMProf(t, "history", nightlies(t, -1), "--metric", "tpot.p50", "--gate", "tpot.p50<+5%")
	if code != ExitOK || !strings.Contains(out, "no change point") || !strings.Contains(out, "gate on the newest run: PASS") {
		t.Errorf("flat nights: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestHistoryUsage: bad flags are usage errors (exit 2).
func TestHistoryUsage(t *testing.T) {
	dir := nightlies(t, -1)
	for _, args := range [][]string{
		{"history", dir, "--metric", "tpot.p42"},
		{"history", dir, "--order", "random"},
		{"history", dir, "--unit", "token"},
		{"history", dir, "--format", "yaml"},
		{"history", dir, "--since", "yesterday"},
		{"history", dir, "--gate", "tpot.p50"},
	} {
		if code, _, stderr := runLLMProf(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args[2:], code, ExitUsage, stderr)
		}
	}
}

// TestHistoryVLLMBenchHTML: the four real nightly bench results, named in
// any order, give Markdown with the step at run 2 and an offline page with
// one chart per metric, one dashed change line per change point, and no
// errors in a browser.
func TestHistoryVLLMBenchHTML(t *testing.T) {
	files := shareddata.Glob(t, "testdata/vllm-bench/surajssd-llm-k8s-0[1-4]_*qps_04.json")
	page := filepath.Join(t.TempDir(), "history.html")
	args := []string{"history", "--format", "markdown", "--out", "html=" + page, files[3], files[1], files[0], files[2]}
	code, out, stderr := runLLMProf(t, args...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
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
