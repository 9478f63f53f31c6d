package history

import (
	"fmt"
	"strings"
)

// Baseline is a series of runs read as the baseline of `diff
// --baseline-history`: the whole series, and where the baseline starts.
// A series with a step is not one distribution: when it has a confirmed
// change point, the baseline is the runs after the last one.
type Baseline struct {
	// Runs are the whole series, in order.
	Runs []RunInfo
	// From is the first run of the baseline: 0, or the run just after the
	// last confirmed change point.
	From int
	// Change is that change point; nil when the series has none.
	Change *BaselineChange
}

// BaselineChange is the last change point of a baseline history.
type BaselineChange struct {
	// Metrics are the metrics with a change point at the run (in the order
	// followed); the first one's figures are below.
	Metrics []string
	// Index is the first run after the change.
	Index int
	Run   RunInfo
	// Before and After are the first metric's levels on either side; P
	// its e-divisive p-value, RunP the run-level t-test's (NaN when the
	// points were runs); Points the unit it was tested on.
	Before, After, P, RunP float64
	Points, Unit           string
}

// FindBaseline finds the change points of a series, already ordered, as
// Analyze does — the same metrics (o.Metrics and every gated one), the same
// detection, units and seeds, so `llmprof history` over the same runs
// reports the same changes — without explaining them, and returns where the
// baseline starts: after the last change point of any metric. A series of
// fewer than two runs has no change point.
func FindBaseline(s *Series, o Options) (*Baseline, error) {
	metrics, err := o.followed()
	if err != nil {
		return nil, err
	}
	b := &Baseline{}
	for _, r := range s.Runs {
		b.Runs = append(b.Runs, RunInfo{ID: r.ID, Time: r.Time, Commit: r.Commit})
	}
	if len(s.Runs) < 2 {
		return b, nil
	}
	for _, name := range metrics {
		m, ok := analyzeMetric(s, name, o)
		if !ok || len(m.Changes) == 0 {
			continue
		}
		c := m.Changes[len(m.Changes)-1]
		switch {
		case b.Change == nil || c.Index > b.Change.Index:
			b.From = c.Index
			b.Change = &BaselineChange{Metrics: []string{name}, Index: c.Index, Run: c.Run,
				Before: c.Before, After: c.After, P: c.P, RunP: c.RunP, Points: m.Points, Unit: m.Unit}
		case c.Index == b.Change.Index:
			b.Change.Metrics = append(b.Change.Metrics, name)
		}
	}
	return b, nil
}

// Describe says in one line what the baseline is, for diff's report: the
// runs it holds and, after a change point, that the runs before it were
// left out and why.
func (b *Baseline) Describe(order string) string {
	n := len(b.Runs)
	if b.Change == nil {
		return fmt.Sprintf("baseline history: %d runs in %s order, no change point (as llmprof history finds them): all %d are the baseline", n, order, n)
	}
	c := b.Change
	pct := ""
	if c.Before != 0 {
		pct = fmt.Sprintf(", %+.1f%%", 100*(c.After-c.Before)/c.Before)
	}
	p := fmt.Sprintf("p = %.3g", c.P)
	if c.Points == UnitRequest {
		p = fmt.Sprintf("p = %.3g on requests, %.3g on runs", c.P, c.RunP)
	}
	one := ""
	if n-b.From == 1 {
		one = "; one run has no spread to measure, so the comparison is of one run per side"
	}
	also := ""
	if len(c.Metrics) > 1 {
		also = "; also " + strings.Join(c.Metrics[1:], ", ")
	}
	return fmt.Sprintf("baseline history: %d runs in %s order, with a change point at run %d, %s (%s %.4g → %.4g %s%s, %s%s): a stepped series is not one distribution, so the baseline is the %d run(s) from run %d on (%s), and the %d before are left out%s",
		n, order, c.Index+1, c.Run.ID, c.Metrics[0], c.Before, c.After, c.Unit, pct, p, also,
		n-b.From, b.From+1, runIDs(b.Runs[b.From:]), b.From, one)
}

func runIDs(runs []RunInfo) string {
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.ID
	}
	return strings.Join(ids, ", ")
}
