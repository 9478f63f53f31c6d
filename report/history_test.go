package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/compare/comparetest"
	"github.com/llmprof/llmprof/history"
	"github.com/llmprof/llmprof/internal/golden"
)

// historyCase is ten nights whose attention kernels slow down from night 7
// (one commit per night), analyzed with a gate on tpot.p50.
func historyCase(t *testing.T) *history.Result {
	t.Helper()
	s := &history.Series{}
	day := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	for i := range 10 {
		w := comparetest.Workload{Requests: 200, Seed: uint64(40 + i)}
		if i >= 6 {
			w.AttentionFactor = 1.5
		}
		s.Runs = append(s.Runs, history.Run{ID: fmt.Sprintf("night%02d.json", i+1), Time: day.AddDate(0, 0, i),
			Commit: fmt.Sprintf("c0ffee%d", i), Data: w.Run()})
	}
	o := history.DefaultOptions()
	o.Metrics = []string{"tpot.p50", "ttft.p50", "throughput"}
	o.Order = history.OrderTime
	o.Detect.Permutations = 199
	o.Compare.Reps = 200
	g, err := compare.ParseGate("tpot.p50<+5%")
	if err != nil {
		t.Fatal(err)
	}
	o.Compare.Policy.Gates = []compare.Gate{g}
	res, err := history.Analyze(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestHistoryGolden: every history format of one stepped series.
func TestHistoryGolden(t *testing.T) {
	res := historyCase(t)
	for ext, write := range map[string]func(*bytes.Buffer) error{
		"txt":  func(b *bytes.Buffer) error { return WriteHistoryText(b, res) },
		"md":   func(b *bytes.Buffer) error { return WriteHistoryMarkdown(b, res) },
		"json": func(b *bytes.Buffer) error { return WriteHistoryJSON(b, res) },
		"html": func(b *bytes.Buffer) error { return WriteHistoryHTML(b, res) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "history_step."+ext), b.Bytes())
	}
}

// TestHistoryJSONContract: the documented paths of llmprof.history/v1.
func TestHistoryJSONContract(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHistoryJSON(&b, historyCase(t)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string `json:"schema"`
		Runs   []struct {
			ID, Commit string
			Time       *time.Time
		} `json:"runs"`
		Metrics []struct {
			Name     string    `json:"name"`
			Values   []float64 `json:"values"`
			Segments []struct {
				From, To int
				Level    float64
			} `json:"segments"`
			Changes []struct {
				Index       int              `json:"index"`
				Commit      string           `json:"commit"`
				P           float64          `json:"p"`
				DeltaPct    *float64         `json:"delta_pct"`
				CILowPct    *float64         `json:"ci_low_pct"`
				CIHighPct   *float64         `json:"ci_high_pct"`
				Explanation []map[string]any `json:"explanation"`
			} `json:"changes"`
		} `json:"metrics"`
		Gate struct {
			Failed bool `json:"failed"`
			Rules  []struct {
				Rule, Verdict string
				Change        int
			} `json:"rules"`
		} `json:"gate"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != history.Schema || len(doc.Runs) != 10 || doc.Runs[0].Time == nil || doc.Warnings == nil {
		t.Fatalf("schema %q, %d runs, warnings %v", doc.Schema, len(doc.Runs), doc.Warnings)
	}
	var tpot bool
	for _, m := range doc.Metrics {
		if m.Name != "tpot.p50" {
			continue
		}
		tpot = true
		if len(m.Values) != 10 || len(m.Changes) != 1 || len(m.Segments) != 2 || m.Segments[1].From != m.Changes[0].Index {
			t.Fatalf("tpot.p50: %+v", m)
		}
		c := m.Changes[0]
		if c.Index != 6 || c.Commit != "c0ffee6" || c.DeltaPct == nil || c.CILowPct == nil || c.CIHighPct == nil ||
			!(*c.CILowPct <= *c.DeltaPct && *c.DeltaPct <= *c.CIHighPct) || len(c.Explanation) == 0 || c.Explanation[0]["bucket"] != "gpu.attention" {
			t.Errorf("change %+v", c)
		}
	}
	if !tpot || !doc.Gate.Failed || len(doc.Gate.Rules) != 1 || doc.Gate.Rules[0].Verdict != "fail" || doc.Gate.Rules[0].Change != 6 {
		t.Errorf("gate %+v", doc.Gate)
	}
}
