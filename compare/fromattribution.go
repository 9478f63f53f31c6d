package compare

import (
	"github.com/llmprof/llmprof/attribution"
)

// FromAttribution converts an attributed run into the observations diff
// compares: per-request metrics in arrival order, per-token gaps, and the
// per-request sums of every stage and token bucket, so that a regression can
// be explained by the buckets that moved.
func FromAttribution(res *attribution.Result) Run {
	run := ColumnsOf(res).run()
	run.Steps = StepsFromAttribution(res)
	return run
}

// stagePresent reports whether any request of the run has time in st, so
// that a stage the input does not have is absent rather than all zeros.
func stagePresent(res *attribution.Result, st attribution.Stage) bool {
	for _, s := range res.Stages {
		if s.Name == st.String() {
			return s.TotalMs > 0
		}
	}
	return false
}
