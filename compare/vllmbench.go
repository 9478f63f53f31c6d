package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
)

// The result file of `vllm bench serve --save-result` (vllm/benchmarks/serve.py
// in vLLM) and of its predecessor benchmarks/benchmark_serving.py: one JSON
// object per run, several separated by newlines with --append-result. The
// field set changed over vLLM's versions:
//
//   - benchmark_serving.py (the nightly benchmark's writer, files in
//     ../shared/testdata/vllm-bench) keeps input_lens, output_lens, ttfts,
//     itls (one list per request), generated_texts and errors in every saved
//     result, but no latencies and no start_times;
//   - vllm/benchmarks/serve.py adds latencies (end-to-end, per request),
//     start_times and queue_times (the client's own queue under
//     --max-concurrency), and keeps the per-request lists only with
//     --save-detailed, latencies either way.
//
// Where latencies is absent, E2E and TPOT are derived from ttfts and itls
// (derivedNote). Times are seconds; a failed request has a non-empty error
// and zero timings.
type vllmBench struct {
	Backend      string  `json:"backend"`
	EndpointType string  `json:"endpoint_type"`
	ModelID      string  `json:"model_id"`
	Label        string  `json:"label"`
	Date         string  `json:"date"`
	Duration     float64 `json:"duration"`
	Completed    int     `json:"completed"`
	NumPrompts   int     `json:"num_prompts"`
	// RequestRate is a string ("inf") in some writers, a number in others.
	RequestRate    json.RawMessage `json:"request_rate"`
	MaxConcurrency json.RawMessage `json:"max_concurrency"`

	InputLens  []int       `json:"input_lens"`
	OutputLens []int       `json:"output_lens"`
	StartTimes []float64   `json:"start_times"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	Latencies  []float64   `json:"latencies"`
	Errors     []*string   `json:"errors"`
}

// vllmBenchNote says what a side read from bench results cannot do.
const vllmBenchNote = "%s: a `vllm bench serve` result: client-side latencies only, so changes cannot be explained by stage, token bucket or GPU kernel (diff traces or saved analyses for that)"

// derivedNote says which figures were derived, not read.
const derivedNote = "%s: this vLLM's bench result has no \"latencies\" (benchmark_serving.py before vllm/benchmarks/serve.py): E2E = TTFT + Σ ITL and TPOT = Σ ITL / (output tokens − 1) are derived from \"ttfts\" and \"itls\" per request (vLLM's own TPOT, which the file's median_tpot_ms reproduces)"

// vllmSummaryError is what diff says of a summary table.
const vllmSummaryError = "%s: the summary table of vLLM's nightly benchmark (benchmark_results.json: one row of aggregates per test, \"Test name\", \"Median TTFT (ms)\"…), not a per-request result: " +
	"means and percentiles alone cannot give an interval; pass the per-request result file of each test instead (the <test name>.json that benchmark_serving.py --save-result, or vllm bench serve --save-result --save-detailed, writes beside it), one per run"

// loadVLLMBench reads every run of a bench result file.
func (out *Input) loadVLLMBench(in *ingest.Input) error {
	p := in.Path
	rc, err := in.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	s := &jsonscan.Scanner{MaxDepth: maxJSONDepth}
	s.ResetReader(rc)
	var runs []Run
	var setups []string
	derived := false
	for i := 0; ; i++ {
		b, err := nextVLLMBench(s)
		if err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("%s: vllm bench result %d: %w", p, i+1, err)
		}
		run, warns, err := b.run()
		derived = derived || (err == nil && len(b.Latencies) == 0 && run.E2E != nil)
		setups = append(setups, b.setup())
		if err != nil {
			return fmt.Errorf("%s: vllm bench result %d: %w", p, i+1, err)
		}
		run.RunID = p
		if b.Label != "" || b.Date != "" {
			run.RunID = fmt.Sprintf("%s (%s %s)", p, b.Label, b.Date)
		}
		for _, w := range warns {
			out.Warnings = append(out.Warnings, p+": "+w)
		}
		runs = append(runs, run)
	}
	if len(runs) == 0 {
		return fmt.Errorf("%s: no vllm bench result in the file", p)
	}
	if len(runs) > 1 {
		// --append-result: several results in one file. Replicates of one
		// benchmark are runs of this side; results of different rates or
		// concurrencies are different benchmarks, never replicates.
		for i := range runs {
			runs[i].RunID = fmt.Sprintf("%s#%d", runs[i].RunID, i+1)
		}
		for i := 1; i < len(setups); i++ {
			if setups[i] != setups[0] {
				return fmt.Errorf("%s: %d results appended with --append-result, of different benchmarks (result 1: %s; result %d: %s): they are not replicates of one run; "+
					"pass one file per benchmark setup (rerun with one --request-rate and --max-concurrency per --result-filename)", p, len(runs), setups[0], i+1, setups[i])
			}
		}
		out.Notes = append(out.Notes, fmt.Sprintf("%s: %d results appended with --append-result, each one run of this side (run-level comparison needs ≥ 2 runs on both sides)", p, len(runs)))
	}
	out.Runs = append(out.Runs, runs...)
	out.Notes = append(out.Notes, fmt.Sprintf(vllmBenchNote, p))
	if derived {
		out.Notes = append(out.Notes, fmt.Sprintf(derivedNote, p))
	}
	return nil
}

// setup names what makes two results one benchmark: model, request rate
// and concurrency limit.
func (b *vllmBench) setup() string {
	raw := func(m json.RawMessage) string {
		if v := string(bytes.TrimSpace(m)); v != "" {
			return v
		}
		return "null"
	}
	return fmt.Sprintf("model %s, request_rate %s, max_concurrency %s", cmpOr(b.ModelID, "?"), raw(b.RequestRate), raw(b.MaxConcurrency))
}

// run turns one bench result into a Run: per request, in the order they were
// sent, TTFT, TPOT (as vLLM defines it: (latency − TTFT) / (output tokens − 1)),
// end-to-end latency, output tokens and the inter-token gaps. A failed
// request counts as not completed and has no timings.
func (b *vllmBench) run() (Run, []string, error) {
	n := max(len(b.TTFTs), len(b.Latencies))
	if n == 0 {
		return Run{}, nil, errors.New("no per-request latencies (neither \"latencies\" nor \"ttfts\"): this vLLM wrote aggregates only; rerun with --save-result --save-detailed")
	}
	for name, l := range map[string]int{"ttfts": len(b.TTFTs), "latencies": len(b.Latencies), "itls": len(b.ITLs),
		"output_lens": len(b.OutputLens), "input_lens": len(b.InputLens), "start_times": len(b.StartTimes), "errors": len(b.Errors)} {
		if l != 0 && l != n {
			return Run{}, nil, fmt.Errorf("%q has %d entries, the other per-request lists %d", name, l, n)
		}
	}
	var warns []string
	if len(b.TTFTs) == 0 {
		warns = append(warns, "saved without --save-detailed: only end-to-end latency per request; TTFT, TPOT and ITL need --save-detailed")
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if len(b.StartTimes) == n {
		slices.SortStableFunc(order, func(x, y int) int {
			switch {
			case b.StartTimes[x] < b.StartTimes[y]:
				return -1
			case b.StartTimes[x] > b.StartTimes[y]:
				return 1
			}
			return 0
		})
	}
	nan := math.NaN()
	run := Run{Requests: n, DurationMS: b.Duration * 1e3}
	if b.ModelID != "" {
		run.Models = []string{b.ModelID}
	}
	series := func(ok bool) Series {
		if !ok {
			return nil
		}
		return make(Series, n)
	}
	withITL := len(b.ITLs) == n
	// derive: no latencies, but every request's first token and gaps.
	derive := len(b.Latencies) == 0 && len(b.TTFTs) == n && withITL
	run.TTFT = series(len(b.TTFTs) == n)
	run.TPOT = series(len(b.TTFTs) == n && (len(b.Latencies) == n || derive) && len(b.OutputLens) == n)
	run.E2E, run.OutputTokens = series(len(b.Latencies) == n || derive), series(len(b.OutputLens) == n)
	run.InputTokens = series(len(b.InputLens) == n)
	run.ArrivalMS = series(len(b.StartTimes) == n)
	if withITL {
		run.ITLCounts = make([]int, n)
	}
	for k, i := range order {
		failed := len(b.Errors) == n && b.Errors[i] != nil && *b.Errors[i] != ""
		if !failed {
			run.Completed++
		}
		set := func(s Series, v float64) {
			if s != nil {
				s[k] = v
				if failed {
					s[k] = nan
				}
			}
		}
		if run.TTFT != nil {
			set(run.TTFT, b.TTFTs[i]*1e3)
		}
		lat := 0.0 // end-to-end seconds, read or derived
		if derive {
			lat = b.TTFTs[i]
			for _, g := range b.ITLs[i] {
				lat += g
			}
		} else if run.E2E != nil {
			lat = b.Latencies[i]
		}
		if run.E2E != nil {
			set(run.E2E, lat*1e3)
		}
		if run.OutputTokens != nil {
			set(run.OutputTokens, float64(b.OutputLens[i]))
		}
		if run.InputTokens != nil {
			run.InputTokens[k] = float64(b.InputLens[i]) // the prompt is known even when the request failed
		}
		if run.ArrivalMS != nil {
			run.ArrivalMS[k] = (b.StartTimes[i] - b.StartTimes[order[0]]) * 1e3
		}
		if run.TPOT != nil {
			tpot := nan
			if b.OutputLens[i] > 1 {
				tpot = (lat - b.TTFTs[i]) * 1e3 / float64(b.OutputLens[i]-1)
			}
			set(run.TPOT, tpot)
		}
		if withITL && !failed {
			for _, g := range b.ITLs[i] {
				run.ITL = append(run.ITL, g*1e3)
			}
			run.ITLCounts[k] = len(b.ITLs[i])
		}
	}
	if run.Completed == 0 {
		return Run{}, nil, fmt.Errorf("all %d requests failed", n)
	}
	if f := n - run.Completed; f > 0 {
		warns = append(warns, fmt.Sprintf("%d of %d requests failed (errors[]); they count as not completed", f, n))
	}
	return run, warns, nil
}
