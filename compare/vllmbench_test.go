package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/internal/stat"
)

// benchResult writes a `vllm bench serve --save-result` object with the keys
// in the order vllm/benchmarks/serve.py writes them (setup, then the
// benchmark's result dict, then the percentile figures). Times are seconds.
// With detailed false the per-request lists that --save-detailed keeps are
// left out, as vLLM removes them. slow scales every latency.
func benchResult(n int, seed uint64, slow float64, detailed bool, failed int) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	var in, out, start, ttft, lat, queue, errs, itls []string
	t := 0.0
	for i := range n {
		p, o := 100+rng.IntN(900), 20+rng.IntN(200)
		first := slow * (0.02 + 0.03*rng.ExpFloat64())
		gaps := make([]string, o-1)
		total := first
		for j := range gaps {
			g := slow * (0.008 + 0.002*rng.Float64())
			total += g
			gaps[j] = strconv.FormatFloat(g, 'f', 6, 64) // fmt's %.6f, without fmt's cost
		}
		e := `""`
		if i < failed {
			e, first, total, gaps = `"HTTP 500"`, 0, 0, nil
		}
		t += rng.ExpFloat64() / 20
		in = append(in, strconv.Itoa(p))
		out = append(out, strconv.Itoa(o))
		start = append(start, strconv.FormatFloat(1000+t, 'f', 6, 64))
		ttft = append(ttft, strconv.FormatFloat(first, 'f', 6, 64))
		lat = append(lat, strconv.FormatFloat(total, 'f', 6, 64))
		queue = append(queue, "0.0")
		errs = append(errs, e)
		itls = append(itls, "["+strings.Join(gaps, ", ")+"]")
	}
	list := func(v []string) string { return "[" + strings.Join(v, ", ") + "]" }
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"date": "20261201-101500", "endpoint_type": "openai", "backend": "openai", "label": null, "model_id": "meta-llama/Llama-3.1-8B-Instruct", "tokenizer_id": "meta-llama/Llama-3.1-8B-Instruct", "num_prompts": %d, "request_rate": 20.0, "burstiness": 1.0, "max_concurrency": null, `, n)
	fmt.Fprintf(&b, `"duration": %.3f, "completed": %d, "failed": %d, "total_input_tokens": 1, "total_output_tokens": 1, "request_throughput": 19.5, "request_goodput": null, "output_throughput": 2000.0, "total_token_throughput": 9000.0, `, t+1, n-failed, failed)
	if detailed {
		fmt.Fprintf(&b, `"input_lens": %s, "output_lens": %s, "ttfts": %s, "itls": %s, `, list(in), list(out), list(ttft), list(itls))
	}
	fmt.Fprintf(&b, `"latencies": %s, `, list(lat))
	if detailed {
		fmt.Fprintf(&b, `"start_times": %s, `, list(start))
	}
	fmt.Fprintf(&b, `"queue_times": %s, `, list(queue))
	if detailed {
		fmt.Fprintf(&b, `"generated_texts": %s, "errors": %s, `, list(make([]string, 0)), list(errs))
	}
	b.WriteString(`"max_output_tokens_per_s": 2100.0, "max_concurrent_requests": 12, "rtfx": 0.0, "mean_ttft_ms": 50.1, "median_ttft_ms": 40.2, "std_ttft_ms": 30.0, "p99_ttft_ms": 180.0, "mean_tpot_ms": 9.0, "median_tpot_ms": 9.0, "std_tpot_ms": 0.5, "p99_tpot_ms": 10.0, "mean_itl_ms": 9.0, "median_itl_ms": 9.0, "std_itl_ms": 0.6, "p99_itl_ms": 10.0}`)
	return b.Bytes()
}

func loadFile(t *testing.T, name string, data []byte) (*Input, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(t.Context(), []string{p}, LoadOptions{})
}

func TestVLLMBenchDetailed(t *testing.T) {
	data := benchResult(50, 1, 1, true, 2)
	in, err := loadFile(t, "bench.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Runs) != 1 || len(in.Notes) != 1 || !strings.Contains(in.Notes[0], "cannot be explained") {
		t.Fatalf("runs %d, notes %q", len(in.Runs), in.Notes)
	}
	r := in.Runs[0]
	if r.Requests != 50 || r.Completed != 48 || len(r.TTFT) != 50 || len(r.TPOT) != 50 || len(r.E2E) != 50 || r.Models[0] != "meta-llama/Llama-3.1-8B-Instruct" {
		t.Fatalf("run %+v", r)
	}
	if len(r.InputTokens) != 50 || r.InputTokens[0] < 100 || r.InputTokens[0] >= 1000 {
		t.Errorf("input_lens: prompt lengths %v", r.InputTokens)
	}
	if len(in.Warnings) != 1 || !strings.Contains(in.Warnings[0], "2 of 50 requests failed") {
		t.Errorf("warnings %q", in.Warnings)
	}
	// Recompute from the same draws: the first request sent is request 0
	// (start times increase), a failed one, so its timings are unknown.
	if !math.IsNaN(r.TTFT[0]) || !math.IsNaN(r.E2E[0]) {
		t.Errorf("a failed request has timings: %v %v", r.TTFT[0], r.E2E[0])
	}
	sumCounts := 0
	for i := range r.ITLCounts {
		sumCounts += r.ITLCounts[i]
	}
	if sumCounts != len(r.ITL) || len(r.ITL) == 0 {
		t.Errorf("itl counts sum to %d, %d gaps", sumCounts, len(r.ITL))
	}
	for i := 2; i < 50; i++ {
		// TPOT is vLLM's: the time after the first token over the tokens after it.
		want := (r.E2E[i] - r.TTFT[i]) / (r.OutputTokens[i] - 1)
		if math.Abs(r.TPOT[i]-want) > 1e-9 || r.TTFT[i] <= 0 || r.TPOT[i] < 8 || r.TPOT[i] > 10 {
			t.Fatalf("request %d: ttft %v, tpot %v, want %v", i, r.TTFT[i], r.TPOT[i], want)
		}
	}
}

func TestVLLMBenchWithoutDetail(t *testing.T) {
	in, err := loadFile(t, "bench.json", benchResult(30, 2, 1, false, 0))
	if err != nil {
		t.Fatal(err)
	}
	r := in.Runs[0]
	if len(r.E2E) != 30 || r.TTFT != nil || r.TPOT != nil || r.ITL != nil {
		t.Fatalf("run %+v", r)
	}
	if len(in.Warnings) != 1 || !strings.Contains(in.Warnings[0], "--save-detailed") {
		t.Errorf("warnings %q", in.Warnings)
	}
}

// --append-result writes one object per line: one run each.
func TestVLLMBenchAppended(t *testing.T) {
	data := append(benchResult(20, 3, 1, true, 0), '\n')
	data = append(data, benchResult(20, 4, 1, true, 0)...)
	in, err := loadFile(t, "bench.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Runs) != 2 || !strings.HasSuffix(in.Runs[1].RunID, "#2") {
		t.Fatalf("%d runs, ids %q", len(in.Runs), in.Runs[0].RunID)
	}
}

func TestVLLMBenchRefusesAggregatesOnly(t *testing.T) {
	_, err := loadFile(t, "bench.json", []byte(`{"date": "x", "backend": "vllm", "num_prompts": 10, "request_throughput": 1.5, "mean_ttft_ms": 40}`))
	if err == nil || !strings.Contains(err.Error(), "bench.json") || !strings.Contains(err.Error(), "--save-detailed") {
		t.Fatalf("err = %v", err)
	}
}

// A slower candidate fails a TTFT gate; an unchanged one does not.
func TestVLLMBenchGate(t *testing.T) {
	base, err := loadFile(t, "base.json", benchResult(400, 5, 1, true, 0))
	if err != nil {
		t.Fatal(err)
	}
	gates := func(rules ...string) Options {
		o := DefaultOptions()
		o.Reps, o.Seed = 300, 1
		for _, r := range rules {
			g, err := ParseGate(r)
			if err != nil {
				t.Fatal(err)
			}
			o.Policy.Gates = append(o.Policy.Gates, g)
		}
		return o
	}
	for _, tc := range []struct {
		seed uint64
		slow float64
		fail bool
	}{{6, 1, false}, {7, 1, false}, {5, 1.5, true}} {
		cand, err := loadFile(t, "cand.json", benchResult(400, tc.seed, tc.slow, true, 0))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Compare(Side{Label: "base", Runs: base.Runs}, Side{Label: "cand", Runs: cand.Runs}, gates("ttft.p50<+10%", "tpot.p50<+10%"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Gate.Failed != tc.fail {
			t.Errorf("seed %d, slow ×%v: gate failed = %v, want %v", tc.seed, tc.slow, res.Gate.Failed, tc.fail)
		}
		// The same seed is the same prompts (input_lens): a replay, paired.
		if want := map[bool]string{true: DesignReplayed, false: DesignDifferent}[tc.seed == 5]; res.Workload != want {
			t.Errorf("seed %d against seed 5: workload %q, want %q", tc.seed, res.Workload, want)
		}
	}
}

// realBench are the nightly benchmark's per-request results (benchmark_serving.py,
// no "latencies"); ../shared/testdata/README.md gives their provenance.
func realBench(t *testing.T, config string) string {
	t.Helper()
	m := shareddata.Glob(t, "testdata/vllm-bench/surajssd-llm-k8s-"+config+"-serving_*.json")
	if len(m) != 1 {
		t.Fatalf("config %s: %d files", config, len(m))
	}
	return m[0]
}

// TestVLLMBenchDerivedFromITL: an older writer's file has ttfts and itls but
// no latencies; E2E and TPOT are derived, and the derived TPOT reproduces the
// file's own median_tpot_ms, its E2E the sum of its own lists.
func TestVLLMBenchDerivedFromITL(t *testing.T) {
	for _, config := range []string{"01_tp8_pp1", "02_tp4_pp2_no_IB", "03_tp4_pp2_IB", "04_tp4_pp2_IB"} {
		p := realBench(t, config)
		in, err := Load(t.Context(), []string{p}, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var own struct {
			MedianTPOT float64     `json:"median_tpot_ms"`
			TTFTs      []float64   `json:"ttfts"`
			ITLs       [][]float64 `json:"itls"`
		}
		if err := json.Unmarshal(raw, &own); err != nil {
			t.Fatal(err)
		}
		r := in.Runs[0]
		if len(r.TPOT) != r.Requests || len(r.E2E) != r.Requests {
			t.Fatalf("%s: tpot %d, e2e %d of %d requests", config, len(r.TPOT), len(r.E2E), r.Requests)
		}
		if got := stat.Quantile(sortedCopy(r.TPOT.known()), 0.5); math.Abs(got-own.MedianTPOT) > 1e-4*own.MedianTPOT {
			t.Errorf("%s: derived median TPOT %.6f ms, the file's median_tpot_ms %.6f", config, got, own.MedianTPOT)
		}
		// Request 7 counted by hand from the file's lists.
		want := own.TTFTs[7]
		for _, g := range own.ITLs[7] {
			want += g
		}
		if math.Abs(r.E2E[7]-want*1e3) > 1e-9 {
			t.Errorf("%s: e2e of request 7 %v ms, want %v", config, r.E2E[7], want*1e3)
		}
		if !slices.ContainsFunc(in.Notes, func(n string) bool { return strings.Contains(n, "are derived from \"ttfts\" and \"itls\"") }) {
			t.Errorf("%s: no note that E2E and TPOT are derived: %q", config, in.Notes)
		}
	}
}

// TestVLLMBenchSummaryTable: the nightly summary table is named for what it
// is, with what to pass instead.
func TestVLLMBenchSummaryTable(t *testing.T) {
	p := shareddata.Path(t, "testdata/vllm-bench/surajssd-llm-k8s-01_tp8_pp1-benchmark_results.json")
	_, err := Load(t.Context(), []string{p}, LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "summary table") || !strings.Contains(err.Error(), "pass the per-request result file") || !strings.Contains(err.Error(), p) {
		t.Fatalf("err %v", err)
	}
}

// TestVLLMBenchAppendResult: appended results of one setup are runs of one
// side; of different request rates, an error that says so.
func TestVLLMBenchAppendResult(t *testing.T) {
	one := append(append(benchResult(30, 1, 1, true, 0), '\n'), benchResult(30, 2, 1, true, 0)...)
	in, err := loadFile(t, "append.json", one)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Runs) != 2 || !strings.Contains(strings.Join(in.Notes, "\n"), "2 results appended with --append-result") {
		t.Fatalf("runs %d, notes %q", len(in.Runs), in.Notes)
	}
	other := bytes.Replace(benchResult(30, 2, 1, true, 0), []byte(`"request_rate": 20.0`), []byte(`"request_rate": 5.0`), 1)
	mixed := append(append(benchResult(30, 1, 1, true, 0), '\n'), other...)
	_, err = loadFile(t, "mixed.json", mixed)
	if err == nil || !strings.Contains(err.Error(), "of different benchmarks") || !strings.Contains(err.Error(), "request_rate 5.0") {
		t.Fatalf("err %v", err)
	}
}

// TestVLLMBenchHistoryDir: a directory of vllm bench results is a baseline
// history, as a comma list of the same files is.
func TestVLLMBenchHistoryDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("run%d.json", i)), benchResult(40, uint64(i+1), 1, true, 0), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := Load(t.Context(), []string{dir}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Runs) != 3 {
		t.Fatalf("%d runs from a directory of 3 results", len(in.Runs))
	}
}
