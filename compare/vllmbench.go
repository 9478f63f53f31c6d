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
)

// The result file of `vllm bench serve --save-result` (vllm/benchmarks/serve.py
// in vLLM): one JSON object per run, several separated by newlines with
// --append-result. The per-request lists — input_lens, output_lens,
// start_times, ttfts, itls (one list per request), errors — are kept only with
// --save-detailed; latencies (end-to-end, per request) and queue_times (the
// client's own queue under --max-concurrency) are kept either way. Times are
// seconds; a failed request has a non-empty error and zero timings.
type vllmBench struct {
	Backend      string  `json:"backend"`
	EndpointType string  `json:"endpoint_type"`
	ModelID      string  `json:"model_id"`
	Label        string  `json:"label"`
	Date         string  `json:"date"`
	Duration     float64 `json:"duration"`
	Completed    int     `json:"completed"`
	NumPrompts   int     `json:"num_prompts"`

	InputLens  []int       `json:"input_lens"`
	OutputLens []int       `json:"output_lens"`
	StartTimes []float64   `json:"start_times"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	Latencies  []float64   `json:"latencies"`
	Errors     []*string   `json:"errors"`
}

// isVLLMBenchHead recognizes a vllm bench serve result by the keys its
// writer puts first (date, endpoint_type/backend, label, model_id, …,
// num_prompts) and its aggregate figures.
func isVLLMBenchHead(head []byte) bool {
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	has := func(k string) bool { return bytes.Contains(head, []byte(`"`+k+`"`)) }
	return has("num_prompts") && (has("backend") || has("endpoint_type")) &&
		(has("request_throughput") || has("ttfts") || has("latencies") || has("mean_ttft_ms"))
}

// vllmBenchNote says what a side read from bench results cannot do.
const vllmBenchNote = "%s: a `vllm bench serve` result: client-side latencies only, so changes cannot be explained by stage, token bucket or GPU kernel (diff traces or saved analyses for that)"

// loadVLLMBench reads every run of a bench result file.
func (out *Input) loadVLLMBench(p string, in *ingest.Input) error {
	rc, err := in.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	var runs []Run
	for i := 0; ; i++ {
		var b vllmBench
		if err := dec.Decode(&b); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("%s: vllm bench result %d: %w", p, i+1, err)
		}
		run, warns, err := b.run()
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
		for i := range runs {
			runs[i].RunID = fmt.Sprintf("%s#%d", runs[i].RunID, i+1)
		}
	}
	out.Runs = append(out.Runs, runs...)
	out.Notes = append(out.Notes, fmt.Sprintf(vllmBenchNote, p))
	return nil
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
	run.TTFT, run.TPOT = series(len(b.TTFTs) == n), series(len(b.TTFTs) == n && len(b.Latencies) == n && len(b.OutputLens) == n)
	run.E2E, run.OutputTokens = series(len(b.Latencies) == n), series(len(b.OutputLens) == n)
	run.InputTokens = series(len(b.InputLens) == n)
	withITL := len(b.ITLs) == n
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
		if run.E2E != nil {
			set(run.E2E, b.Latencies[i]*1e3)
		}
		if run.OutputTokens != nil {
			set(run.OutputTokens, float64(b.OutputLens[i]))
		}
		if run.InputTokens != nil {
			run.InputTokens[k] = float64(b.InputLens[i]) // the prompt is known even when the request failed
		}
		if run.TPOT != nil {
			tpot := nan
			if b.OutputLens[i] > 1 {
				tpot = (b.Latencies[i] - b.TTFTs[i]) * 1e3 / float64(b.OutputLens[i]-1)
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
