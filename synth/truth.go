package synth

import "github.com/llmprof/llmprof/ingest"

// TokenTruth is the true decomposition of one output token's interval
// (previous token, this token] — (arrival, first token] for the first — into
// the buckets of docs/design.md §7. Tokenize is kept apart from Queue so that the
// attribution's mapping of pre-queue CPU work can be checked either way.
type TokenTruth struct {
	Index          int
	From, To       int64
	Tokenize       int64
	Queue          int64
	Preempted      int64
	CPUSchedule    int64
	GPU            [ingest.NumKernelCategories]int64
	GPUIdle        int64
	CPUPostprocess int64
	// Other is the engine loop's time between steps.
	Other int64
}

// Sum is the total of all buckets; it equals To − From.
func (t *TokenTruth) Sum() int64 {
	s := t.Tokenize + t.Queue + t.Preempted + t.CPUSchedule + t.GPUIdle + t.CPUPostprocess + t.Other
	for _, g := range t.GPU {
		s += g
	}
	return s
}

// TokenTruths decomposes every output token of request q.
func (r *Run) TokenTruths(q *Request) []TokenTruth {
	out := make([]TokenTruth, len(q.Tokens))
	for i := range q.Tokens {
		tt := &out[i]
		tt.Index = i
		tt.To = q.Tokens[i]
		st := &r.Steps[q.Steps[i]]
		if i == 0 {
			tt.From = q.Arrival
			tt.Tokenize = q.Enqueued - q.Arrival
			tt.Queue = q.FirstScheduled - q.Enqueued
		} else {
			tt.From = q.Tokens[i-1]
			gap := st.Start - tt.From
			for _, p := range q.Preemptions {
				if p.To == st.Start {
					tt.Preempted = p.To - p.From
					gap -= tt.Preempted
				}
			}
			tt.Other = gap
		}
		byCat, idle, first, last := r.StepGPU(st)
		tt.GPU = byCat
		tt.GPUIdle = idle
		tt.CPUSchedule = first - st.Start
		tt.CPUPostprocess = st.End - last
	}
	return out
}
