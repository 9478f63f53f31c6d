package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/internal/jsonscan"
)

// SamplesSchema names the JSON shape of a Run. `analyze --format json`
// embeds one Run under its top-level "samples" key, and a file may hold one
// Run or an array of them; either way the schema travels with each run so a
// reader can refuse an incompatible future version instead of misreading it.
const SamplesSchema = "llmprof.samples/v1"

// StageBuckets are the request-stage attribution buckets (docs/diff.md, request
// level), as attribution names them. Each is the time one request spent in
// that stage.
var StageBuckets = attribution.StageNames()

// TokenBuckets are the token-level attribution buckets (docs/diff.md, token
// level), as attribution names them. For one output token they partition the
// interval since the previous token; a Run carries their per-request sums.
var TokenBuckets = attribution.BucketNames()

// Run is one side's observations from one run of a workload: everything diff
// needs to compare runs statistically, and nothing it does not. Per-request
// series are in arrival order (the block bootstrap relies on neighbours being
// neighbours in time) and all have length Requests, or are absent; a value
// that is unknown for one request is NaN (null in JSON). Times are
// milliseconds.
//
// JSON field names are stable (they are part of the saved-analysis contract):
//
//	schema          "llmprof.samples/v1"
//	run_id          optional name of the run (several runs per side → run-level replication)
//	models          model ids served (diff refuses to compare disjoint sets)
//	duration_ms     wall-clock length of the run, first arrival to last response
//	requests        number of requests (length of every per-request array)
//	completed       requests that finished (throughput numerator)
//	slo, good       the SLO goodput was counted against ("ttft=200ms,tpot=50ms") and
//	                how many completed requests met it; good is meaningless when slo is ""
//	ttft_ms, tpot_ms, e2e_ms, queue_ms   per request
//	output_tokens   per request
//	input_tokens    per request: prompt tokens; two runs whose sequences agree replayed
//	                one workload, and diff pairs their requests (docs/diff.md)
//	arrival_ms      per request: arrival since the run's first, for the concurrency at arrival
//	                that the adjusted metrics (ttft.adj …) hold constant
//	itl_ms          per output-token gap, requests concatenated in arrival order
//	itl_counts      per request, how many of the itl_ms gaps are its own
//	stages_ms       {stage bucket: per-request ms}
//	tokens_ms       {token bucket: per-request ms, summed over the request's output tokens}
//	first_token_ms  {token bucket: per-request ms of the first output token only}
//	tenants_ms      {tenant: per-request ms attributed to that other tenant}
//	tokens_estimated  token buckets were estimated from request-level attributes
type Run struct {
	RunID      string   `json:"run_id,omitempty"`
	Models     []string `json:"models,omitempty"`
	DurationMS float64  `json:"duration_ms"`
	Requests   int      `json:"requests"`
	Completed  int      `json:"completed"`
	SLO        string   `json:"slo,omitempty"`
	Good       int      `json:"good,omitempty"`

	TTFT         Series `json:"ttft_ms,omitempty"`
	TPOT         Series `json:"tpot_ms,omitempty"`
	E2E          Series `json:"e2e_ms,omitempty"`
	Queue        Series `json:"queue_ms,omitempty"`
	OutputTokens Series `json:"output_tokens,omitempty"`
	InputTokens  Series `json:"input_tokens,omitempty"`
	ArrivalMS    Series `json:"arrival_ms,omitempty"`
	ITL          Series `json:"itl_ms,omitempty"`
	// ITLCounts is how many of the ITL gaps each request contributed, so
	// the bootstrap can resample a request with its tokens.
	ITLCounts []int `json:"itl_counts,omitempty"`

	Stages     map[string]Series `json:"stages_ms,omitempty"`
	Tokens     map[string]Series `json:"tokens_ms,omitempty"`
	FirstToken map[string]Series `json:"first_token_ms,omitempty"`
	Tenants    map[string]Series `json:"tenants_ms"`

	TokensEstimated bool `json:"tokens_estimated,omitempty"`

	// Kernels are the run's GPU kernels by identity (compare/kernels.go),
	// from a raw trace; saved analyses do not keep them.
	Kernels *KernelRun `json:"-"`
	// Steps are the run's engine steps with their batch composition
	// (compare/steps.go), from a raw trace; saved analyses do not keep them.
	Steps *StepRun `json:"-"`
}

// runJSON is Run with the schema marker, so that MarshalJSON and UnmarshalJSON
// can add and check it without recursing.
type runJSON struct {
	Schema string `json:"schema"`
	runFields
}

type runFields Run

// MarshalJSON writes the run with its schema marker first.
func (r Run) MarshalJSON() ([]byte, error) {
	return json.Marshal(runJSON{Schema: SamplesSchema, runFields: runFields(r)})
}

// UnmarshalJSON reads a run, accepting a missing schema (hand-written files)
// and refusing any other version. It reads b with runDecoder
// (compare/rundecode.go), which gives what json.Unmarshal into runJSON
// gives, without reflection.
func (r *Run) UnmarshalJSON(b []byte) error {
	s := &jsonscan.Scanner{MaxDepth: maxJSONDepth}
	s.Reset(b)
	d := runDecoder{s: s}
	v := d.run()
	if err := endDocument(s); err != nil {
		return err
	}
	if d.err != nil {
		return d.err
	}
	*r = v
	return nil
}

// SchemaError is a saved file written for a schema this llmprof cannot read.
type SchemaError struct{ Got, Want string }

// Error says which schema was found and which is supported.
func (e *SchemaError) Error() string {
	return fmt.Sprintf("schema %q is not supported (this llmprof reads %q)", e.Got, e.Want)
}

// Validate checks that the run's arrays agree with each other. Its errors
// name the field; diff refuses a run that fails it.
func (r *Run) Validate() error {
	if r.Requests < 0 || r.Completed < 0 || r.Good < 0 {
		return errors.New("negative requests, completed or good count")
	}
	if r.Requests == 0 && len(r.ITL) == 0 && (r.Kernels == nil || len(r.Kernels.Units) == 0) {
		return errors.New("empty run: no requests")
	}
	if math.IsNaN(r.DurationMS) || r.DurationMS < 0 {
		return fmt.Errorf("duration_ms %v is not a non-negative number", r.DurationMS)
	}
	if r.Completed > r.Requests {
		return fmt.Errorf("completed (%d) exceeds requests (%d)", r.Completed, r.Requests)
	}
	if r.SLO != "" && r.Good > r.Completed {
		return fmt.Errorf("good (%d) exceeds completed (%d)", r.Good, r.Completed)
	}
	for _, s := range []struct {
		name string
		s    Series
	}{{"ttft_ms", r.TTFT}, {"tpot_ms", r.TPOT}, {"e2e_ms", r.E2E}, {"queue_ms", r.Queue}, {"output_tokens", r.OutputTokens}, {"input_tokens", r.InputTokens}, {"arrival_ms", r.ArrivalMS}} {
		if len(s.s) != 0 && len(s.s) != r.Requests {
			return fmt.Errorf("%s has %d values for %d requests", s.name, len(s.s), r.Requests)
		}
	}
	if len(r.ITLCounts) != 0 {
		t := 0
		for _, c := range r.ITLCounts {
			if c < 0 {
				return errors.New("itl_counts has a negative count")
			}
			t += c
		}
		if len(r.ITLCounts) != r.Requests || t != len(r.ITL) {
			return fmt.Errorf("itl_counts has %d counts adding up to %d for %d requests and %d itl_ms gaps", len(r.ITLCounts), t, r.Requests, len(r.ITL))
		}
	}
	for _, m := range []struct {
		name string
		m    map[string]Series
	}{{"stages_ms", r.Stages}, {"tokens_ms", r.Tokens}, {"first_token_ms", r.FirstToken}, {"tenants_ms", r.Tenants}} {
		for _, k := range sortedKeys(m.m) {
			if n := len(m.m[k]); n != 0 && n != r.Requests {
				return fmt.Errorf("%s[%q] has %d values for %d requests", m.name, k, n, r.Requests)
			}
		}
	}
	for _, m := range []struct {
		name  string
		m     map[string]Series
		known []string
	}{{"stages_ms", r.Stages, StageBuckets}, {"tokens_ms", r.Tokens, TokenBuckets}, {"first_token_ms", r.FirstToken, TokenBuckets}} {
		for _, k := range sortedKeys(m.m) {
			if !slices.Contains(m.known, k) {
				return fmt.Errorf("%s has unknown bucket %q (known: %v)", m.name, k, m.known)
			}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Series is a sequence of measurements in which NaN means "unknown". In JSON
// it is an array of numbers with null for NaN (JSON has no NaN).
type Series []float64

// MarshalJSON writes NaN and ±Inf as null.
func (s Series) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 2+8*len(s))
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads an array of numbers and nulls. It scans the array
// itself: an ITL series holds one value per output token, and going through
// encoding/json's generic path would cost an allocation per element.
func (s *Series) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*s = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errors.New("series: want an array of numbers")
	}
	body := b[1 : len(b)-1]
	out := make(Series, 0, bytes.Count(body, []byte{','})+1)
	if len(bytes.TrimSpace(body)) == 0 {
		*s = out
		return nil
	}
	for i := 0; ; i++ {
		j := bytes.IndexByte(body, ',')
		elem := body
		if j >= 0 {
			elem = body[:j]
		}
		elem = bytes.TrimSpace(elem)
		if string(elem) == "null" {
			out = append(out, math.NaN())
		} else {
			v, err := strconv.ParseFloat(string(elem), 64)
			if err != nil || len(elem) == 0 || elem[0] == '+' || elem[0] == '.' || !isJSONNumber(elem) {
				return fmt.Errorf("series element %d: %q is not a number or null", i, elem)
			}
			out = append(out, v)
		}
		if j < 0 {
			break
		}
		body = body[j+1:]
	}
	*s = out
	return nil
}

// isJSONNumber rejects what strconv accepts but JSON does not (Inf, NaN,
// hex, underscores).
func isJSONNumber(b []byte) bool {
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
		default:
			return false
		}
	}
	return true
}

// known returns the series without its unknown (NaN) values, in order.
func (s Series) known() []float64 {
	out := make([]float64, 0, len(s))
	for _, v := range s {
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}
