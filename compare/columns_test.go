package compare_test

import (
	"math"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// TestColumnsAreTheRunsSeries: every series of FromAttribution's run is one
// column of ColumnsOf, by its name (a key of its map, so no two columns of a
// map share one), with the run's values as the raw ones over the scale.
func TestColumnsAreTheRunsSeries(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(3, 4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	res := attribution.Analyze(synthtrace.WithGPU(t, run, true), attribution.Options{})
	got := compare.FromAttribution(res)
	cols := compare.ColumnsOf(res)
	series := map[string]compare.Series{"ttft_ms": got.TTFT, "tpot_ms": got.TPOT, "e2e_ms": got.E2E, "queue_ms": got.Queue,
		"output_tokens": got.OutputTokens, "input_tokens": got.InputTokens, "arrival_ms": got.ArrivalMS, "itl_ms": got.ITL}
	itlCounts := make(compare.Series, len(got.ITLCounts))
	for i, n := range got.ITLCounts {
		itlCounts[i] = float64(n)
	}
	series["itl_counts"] = itlCounts
	for _, m := range []struct {
		name string
		cols []compare.Column
		run  map[string]compare.Series
	}{{"series", cols.Series, series}, {"stages", cols.Stages, got.Stages}, {"tokens", cols.Tokens, got.Tokens}, {"first tokens", cols.FirstToken, got.FirstToken}} {
		if m.name != "series" && len(m.cols) != len(m.run) {
			t.Errorf("%s: %d columns, %d series in the run", m.name, len(m.cols), len(m.run))
		}
		if len(m.cols) == 0 {
			t.Errorf("%s: no columns: the run checks nothing", m.name)
		}
		for _, c := range m.cols {
			s, ok := m.run[c.Name]
			if !ok || len(s) != len(c.Raw) {
				t.Fatalf("%s: column %s (%d values) is not a series of the run (%d)", m.name, c.Name, len(c.Raw), len(s))
			}
			for i, x := range c.Raw {
				if v := x / c.Scale; v != s[i] && !(math.IsNaN(v) && math.IsNaN(s[i])) {
					t.Fatalf("%s: %s[%d] = %v/%v, the run has %v", m.name, c.Name, i, x, c.Scale, s[i])
				}
			}
		}
	}
}
