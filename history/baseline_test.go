package history

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// TestFindBaselineNightly: FindBaseline finds the change points Analyze
// finds on the same runs. The four real nightly results (01 TP 8, 02–04
// TP 4 × PP 2) step at 02 in the six latency metrics, so the baseline is
// 02–04; 02–04 alone have no change point and are all the baseline; 01 and
// 02 alone cannot confirm a change (one run on each side leaves the
// run-level t-test no degree of freedom), so both are the baseline.
func TestFindBaselineNightly(t *testing.T) {
	files := shareddata.Glob(t, "testdata/vllm-bench/surajssd-llm-k8s-0[1-4]_*qps_04.json")
	if len(files) != 4 {
		t.Fatalf("%d files, want 4", len(files))
	}
	load := func(files ...string) *Series {
		s, err := Load(context.Background(), files, compare.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Order(OrderAuto); err != nil {
			t.Fatal(err)
		}
		return s
	}
	o := DefaultOptions()
	all := load(files...)
	b, err := FindBaseline(all, o)
	if err != nil {
		t.Fatal(err)
	}
	if b.From != 1 || b.Change == nil || !slices.Equal(b.Change.Metrics, []string{"ttft.p50", "ttft.p90", "tpot.p50", "itl.p50", "e2e.p50", "e2e.p90"}) {
		t.Fatalf("from %d, change %+v", b.From, b.Change)
	}
	if d := b.Describe(OrderTime); !strings.Contains(d, "change point at run 2") || !strings.Contains(d, "the baseline is the 3 run(s) from run 2 on") {
		t.Errorf("describe: %s", d)
	}
	o.Compare.Reps = 200
	res, err := Analyze(all, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Metrics {
		if len(m.Changes) > 0 && m.Changes[len(m.Changes)-1].Index > b.From {
			t.Errorf("%s: Analyze's last change at %d, after FindBaseline's %d", m.Name, m.Changes[len(m.Changes)-1].Index, b.From)
		}
	}
	for _, tc := range []struct {
		name  string
		files []string
	}{{"02–04", files[1:]}, {"01, 02", files[:2]}} {
		b, err := FindBaseline(load(tc.files...), DefaultOptions())
		if err != nil || b.From != 0 || b.Change != nil {
			t.Errorf("%s: from %d, change %+v, %v", tc.name, b.From, b.Change, err)
		}
	}
}
