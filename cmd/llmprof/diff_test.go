package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/compare/comparetest"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// runLLMProf runs the command line with fake streams.
func runLLMProf(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

func writeJSON(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, b)
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// analysis wraps runs as a saved analysis (analyze --format json).
func analysis(samples any) map[string]any {
	return map[string]any{"schema": "llmprof.report/v1", "requests": map[string]any{"count": 1}, "samples": samples}
}

// fixtures writes a baseline, an unchanged candidate and a regressed one.
type fixtures struct{ dir, base, same, slow string }

// fixtureDocs are the three saved analyses newFixtures writes, simulated and
// encoded once for the seven tests that write them (each into a folder of
// its own).
var fixtureDocs = sync.OnceValues(func() ([3][]byte, error) {
	var docs [3][]byte
	for i, w := range []comparetest.Workload{{Requests: 400, Seed: 1}, {Requests: 400, Seed: 3}, {Requests: 400, Seed: 2, AttentionFactor: 1.5}} {
		b, err := json.Marshal(analysis(w.Run()))
		if err != nil {
			return docs, err
		}
		docs[i] = b
	}
	return docs, nil
})

func newFixtures(t *testing.T) fixtures {
	t.Helper()
	docs, err := fixtureDocs()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return fixtures{
		dir:  dir,
		base: writeFile(t, dir, "base.json", docs[0]),
		same: writeFile(t, dir, "same.json", docs[1]),
		slow: writeFile(t, dir, "slow.json", docs[2]),
	}
}

const fast = "--bootstrap=300"

// TestDiffExitCodes: a failed gate is exit 3 with its line on stderr, an
// unusable input exit 1, a mistake in the flags, arguments or gate file
// exit 2 (the gate's verdicts are internal/driver's TestDiffGate).
func TestDiffExitCodes(t *testing.T) {
	fx := newFixtures(t)
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"regression fails the gate", []string{"diff", fast, fx.base, fx.slow, "--gate", "tpot.p50<+5%"}, ExitRegression, "FAIL", "gate failed: 1 of 1 rules failed (tpot.p50 < +5%)"},
		{"same file on both sides", []string{"diff", fast, fx.base, fx.base, "--gate", "tpot.p50<+5%"}, ExitError, "", "same input"},
		{"--inconclusive pass contradicts", []string{"diff", fast, fx.base, fx.same, "--gate", "throughput>-5%", "--inconclusive", "pass", "--fail-on-inconclusive"}, ExitUsage, "", "contradicts --fail-on-inconclusive"},
		{"bad --inconclusive", []string{"diff", fast, fx.base, fx.same, "--gate", "throughput>-5%", "--inconclusive", "maybe"}, ExitUsage, "", "want pass or fail"},
		{"bad gate", []string{"diff", fx.base, fx.slow, "--gate", "ttft.p99<10"}, ExitUsage, "", "needs a unit"},
		{"unknown metric", []string{"diff", fx.base, fx.slow, "--gate", "ttfb.p99<+10%"}, ExitUsage, "", "unknown metric"},
		{"duplicate rule", []string{"diff", fx.base, fx.slow, "--gate", "ttft.p99<+10%", "--gate", "ttft.p99<+5ms"}, ExitUsage, "", "one rule per metric"},
		{"one argument", []string{"diff", fx.base}, ExitUsage, "", "diff: missing <baseline> and <candidate>"},
		{"bad format", []string{"diff", "--format", "xml", fx.base, fx.slow}, ExitUsage, "", "unknown --format"},
		{"bad out", []string{"diff", "--out", "summary.md", fx.base, fx.slow}, ExitUsage, "", "FORMAT=PATH"},
		{"bad block", []string{"diff", "--block", "huge", fx.base, fx.slow}, ExitUsage, "", "block"},
		{"bad alpha", []string{"diff", "--alpha", "0.9", fx.base, fx.slow}, ExitUsage, "", "--alpha"},
		{"empty list item", []string{"diff", fx.base + ",", fx.slow}, ExitUsage, "", "empty input"},
		{"missing gate file", []string{"diff", "--gate-file", filepath.Join(fx.dir, "nope.yaml"), fx.base, fx.slow}, ExitError, "", "nope.yaml"},
		{"bad gate file", []string{"diff", "--gate-file", writeFile(t, fx.dir, "bad.yaml", []byte("gate: [x]\n")), fx.base, fx.slow}, ExitUsage, "", "bad.yaml"},
		{"missing input", []string{"diff", fx.base, filepath.Join(fx.dir, "missing.json")}, ExitError, "", "missing.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runLLMProf(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}

// TestDiffBadInputs: unusable inputs exit 1 with a message naming the file;
// none of them passes.
func TestDiffBadInputs(t *testing.T) {
	fx := newFixtures(t)
	dir := fx.dir
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	otlp := `{"resourceSpans":[{"resource":{},"scopeSpans":[]}]}`
	for _, tc := range []struct {
		name, file string
		content    []byte
		want       string
	}{
		{"raw OTLP JSON without requests", "trace.json", []byte(otlp), "no requests found"},
		{"Tempo JSON without requests", "tempo.json", []byte(`{"batches":[{"resource":{},"scopeSpans":[]}]}`), "no requests found"},
		{"raw OTLP JSON Lines without requests", "trace.jsonl", []byte(otlp + "\n" + otlp + "\n"), "no requests found"},
		{"broken nsys export", "profile.sqlite", append([]byte("SQLite format 3\x00"), make([]byte, 100)...), "Nsight Systems"},
		{"protobuf without requests", "trace.pb", []byte{0x0a, 0x10, 0x0a, 0x02}, "no requests found"},
		{"other analysis schema", "old.json", []byte(`{"schema":"llmprof.report/v2","samples":{}}`), `schema "llmprof.report/v2" is not supported`},
		{"analysis without samples", "nosamples.json", []byte(`{"schema":"llmprof.report/v1","requests":{"count":3}}`), `has no "samples"`},
		{"other samples schema", "s.json", []byte(`{"schema":"llmprof.samples/v9","requests":3}`), `schema "llmprof.samples/v9" is not supported`},
		{"a diff report", "d.json", []byte(`{"schema":"llmprof.diff/v1","metrics":[]}`), "is a diff report"},
		{"unknown JSON", "x.json", []byte(`{"hello":1}`), "not a saved analysis"},
		{"empty file", "empty.json", nil, "empty file"},
		{"broken JSON", "broken.json", []byte(`{"schema":`), "not valid JSON"},
		{"empty run", "emptyrun.json", []byte(`{"schema":"llmprof.samples/v1","requests":0}`), "empty run"},
		{"empty array", "none.json", []byte(`[]`), "no runs"},
		{"inconsistent run", "bad.json", []byte(`{"requests":3,"ttft_ms":[1,2]}`), "ttft_ms has 2 values for 3 requests"},
		{"other model", "mistral.json", mustJSON(t, analysis(comparetest.Workload{Requests: 50, Seed: 3, Model: "mistral-7b"}.Run())), "different models"},
		{"no overlapping metric", "e2eonly.json", []byte(`{"requests":3,"e2e_ms":[1,2,3]}`), "no metric in common"},
		{"gzip raw trace without requests", "trace.json.gz", gz([]byte(otlp)), "no requests found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := fx.base
			if tc.name == "no overlapping metric" {
				base = writeFile(t, dir, "ttftonly.json", []byte(`{"requests":3,"ttft_ms":[1,2,3]}`))
			}
			p := writeFile(t, dir, tc.file, tc.content)
			code, stdout, stderr := runLLMProf(t, "diff", fast, "--gate", "ttft.p50<+50%", base, p)
			if code != ExitError {
				t.Errorf("exit %d, want %d (stdout %q)", code, ExitError, stdout)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr lacks %q: %s", tc.want, stderr)
			}
			if !strings.Contains(stderr, filepath.Base(tc.file)) && tc.name != "no overlapping metric" {
				t.Errorf("stderr does not name the file %s: %s", tc.file, stderr)
			}
			if strings.Contains(stdout, "PASS") {
				t.Errorf("bad input reported a pass:\n%s", stdout)
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		code, _, stderr := runLLMProf(t, "diff", fx.base, dir)
		if code != ExitError || !strings.Contains(stderr, "no requests found") {
			t.Errorf("exit %d, stderr %s", code, stderr)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDiffInputKinds: samples files, arrays, gzip, comma-separated lists and
// saved analyses all load; several runs per side compare run by run.
func TestDiffInputKinds(t *testing.T) {
	dir := t.TempDir()
	var bs, cs []string
	var arr []compare.Run
	for i := range uint64(5) {
		b := comparetest.Workload{Requests: 80, Seed: 10 + i}.Run()
		c := comparetest.Workload{Requests: 80, Seed: 20 + i, NeighbourMS: 3}.Run()
		arr = append(arr, c)
		bs = append(bs, writeJSON(t, dir, "b"+string(rune('0'+i))+".json", b)) // bare samples
		cs = append(cs, writeJSON(t, dir, "c"+string(rune('0'+i))+".json", analysis(c)))
	}
	arrPath := writeJSON(t, dir, "cands.json", arr)
	var gzBuf bytes.Buffer
	zw := gzip.NewWriter(&gzBuf)
	zw.Write(mustJSON(t, analysis(arr)))
	zw.Close()
	gzPath := writeFile(t, dir, "cands.json.gz", gzBuf.Bytes())
	for _, tc := range []struct{ name, cand string }{
		{"list of analyses", strings.Join(cs, ",")},
		{"array of runs", arrPath},
		{"gzip analysis with an array", gzPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runLLMProf(t, "diff", fast, "--format", "json", "--gate", "tpot.p50<+5%", strings.Join(bs, ","), tc.cand)
			if code != ExitRegression {
				t.Fatalf("exit %d, want 3; stderr %s", code, stderr)
			}
			var doc struct {
				Unit    string
				Metrics []struct {
					Name        string
					Method      string
					NBaseline   int `json:"n_baseline"`
					Verdict     string
					Explanation []struct{ Bucket string }
				}
			}
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Unit != "run" {
				t.Errorf("unit %s, want run", doc.Unit)
			}
			for _, m := range doc.Metrics {
				if m.Name == "tpot.p50" {
					if m.Method != "run-level" || m.NBaseline != 5 || m.Verdict != "fail" || len(m.Explanation) == 0 || m.Explanation[0].Bucket != "tenant:noisy" {
						t.Errorf("tpot.p50: %+v", m)
					}
				}
			}
		})
	}
}

// TestDiffOutputs: --format picks stdout's renderer; --out writes more.
func TestDiffOutputs(t *testing.T) {
	fx := newFixtures(t)
	md, junit, js := filepath.Join(fx.dir, "summary.md"), filepath.Join(fx.dir, "diff.xml"), filepath.Join(fx.dir, "diff.json")
	code, stdout, _ := runLLMProf(t, "diff", fast, "--format", "markdown", "--gate", "tpot.p50<+5%",
		"--out", "junit="+junit, "--out", "json="+js, "--out", "md="+md, fx.base, fx.slow)
	if code != ExitRegression {
		t.Fatalf("exit %d", code)
	}
	if !strings.HasPrefix(stdout, "### ❌ llmprof diff: FAIL") {
		t.Errorf("markdown on stdout starts %q", stdout[:min(40, len(stdout))])
	}
	for path, want := range map[string]string{md: "### ❌ llmprof diff: FAIL", junit: "<testsuites", js: `"schema": "llmprof.diff/v1"`} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q", filepath.Base(path), want)
		}
	}
	// Same seed, same inputs: byte-identical JSON.
	_, again, _ := runLLMProf(t, "diff", fast, "--format", "json", "--gate", "tpot.p50<+5%", fx.base, fx.slow)
	first, _ := os.ReadFile(js)
	if again != string(first) {
		t.Error("the same diff twice gave different JSON")
	}
	// Not a terminal: no colour.
	_, text, _ := runLLMProf(t, "diff", fast, fx.base, fx.slow)
	if strings.Contains(text, "\x1b[") {
		t.Error("colour escapes in non-terminal output")
	}
}

// TestDiffReadsWhatAnalyzeReads: every shared OTLP-family sample (OTLP
// JSON, a bare Jaeger trace, and a Tempo file built from the OTLP one) is
// taken by diff through the analyze pipeline, as analyze takes it — none is
// refused as "not a saved analysis" (issue 16).
func TestDiffReadsWhatAnalyzeReads(t *testing.T) {
	files := shareddata.Glob(t, "testdata/otlp/*.json")
	b, err := os.ReadFile(shareddata.Path(t, "testdata/otlp/otlp-proto-examples-trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	tempo := writeFile(t, t.TempDir(), "tempo.json", bytes.Replace(b, []byte(`"resourceSpans"`), []byte(`"batches"`), 1))
	fx := newFixtures(t)
	for _, f := range append(files, tempo) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, _, aerr := runLLMProf(t, "analyze", f)
			code, _, derr := runLLMProf(t, "diff", fast, fx.base, f)
			if strings.Contains(derr, "not a saved analysis") {
				t.Fatalf("diff refused what analyze reads: %s", derr)
			}
			// These samples carry no LLM request spans: both commands
			// read them and say so.
			if code != ExitError || !strings.Contains(derr, "no requests found") || !strings.Contains(derr, filepath.Base(f)) {
				t.Errorf("diff: exit %d, %s (analyze: %s)", code, derr, aerr)
			}
		})
	}
}

// TestDiffStrictOutput: input warnings are shown and fail --strict; -o
// writes the report whole (a directory of saved analyses as a baseline
// history is internal/driver's TestDiffSavedAnalysesHistory).
func TestDiffStrictOutput(t *testing.T) {
	fx := newFixtures(t)
	warned := map[string]any{"schema": "llmprof.report/v1", "samples": comparetest.Workload{Requests: 400, Seed: 5}.Run(),
		"warnings": []map[string]any{{"path": "run/trace.jsonl", "pos": "line 812", "code": "truncated", "message": "file ends inside a record"}}}
	w := writeJSON(t, fx.dir, "warned.json", warned)
	code, stdout, _ := runLLMProf(t, "diff", fast, fx.base, w)
	if code != ExitOK || !strings.Contains(stdout, "input warnings") || !strings.Contains(stdout, "file ends inside a record") {
		t.Errorf("input warning not shown (exit %d):\n%s", code, stdout)
	}
	if code, _, stderr := runLLMProf(t, "diff", fast, "--strict", fx.base, w); code != ExitError || !strings.Contains(stderr, "--strict") {
		t.Errorf("--strict with an input warning: exit %d, %s", code, stderr)
	}

	out := filepath.Join(fx.dir, "diff.json")
	code, stdout, _ = runLLMProf(t, "diff", fast, "-f", "json", "-o", out, fx.base, fx.same)
	b, err := os.ReadFile(out)
	if code != ExitOK || stdout != "" || err != nil || !json.Valid(b) {
		t.Fatalf("-o: exit %d, stdout %q, file %v (%d bytes)", code, stdout, err, len(b))
	}
	if ents, _ := os.ReadDir(fx.dir); slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), ".llmprof-") }) {
		t.Error("-o left a temporary file behind")
	}
}

// Two `vllm bench serve --save-result --save-detailed` files diff as two
// runs, and the report says what such a side cannot explain.
func TestDiffVLLMBenchResults(t *testing.T) {
	dir := t.TempDir()
	bench := func(name string, scale float64) string {
		var ttft, lat, out, itls, start []string
		for i := range 40 {
			f := scale * (0.03 + 0.001*float64(i%7))
			gaps := []string{}
			total := f
			for j := range 9 {
				g := scale * (0.009 + 0.0001*float64((i+j)%5))
				gaps = append(gaps, fmt.Sprintf("%.6f", g))
				total += g
			}
			ttft = append(ttft, fmt.Sprintf("%.6f", f))
			lat = append(lat, fmt.Sprintf("%.6f", total))
			out = append(out, "10")
			itls = append(itls, "["+strings.Join(gaps, ",")+"]")
			start = append(start, fmt.Sprintf("%.3f", 100+0.05*float64(i)))
		}
		l := func(v []string) string { return "[" + strings.Join(v, ",") + "]" }
		doc := fmt.Sprintf(`{"date": "20261201-101500", "endpoint_type": "openai", "backend": "openai", "label": null, "model_id": "m", "num_prompts": 40, "duration": 2.5, "completed": 40, "request_throughput": 16.0, "output_lens": %s, "ttfts": %s, "itls": %s, "latencies": %s, "start_times": %s, "errors": %s}`,
			l(out), l(ttft), l(itls), l(lat), l(start), l(slices.Repeat([]string{`""`}, 40)))
		return writeFile(t, dir, name, []byte(doc))
	}
	base, cand := bench("base.json", 1), bench("cand.json", 1.3)
	code, stdout, stderr := runLLMProf(t, "diff", fast, base, cand)
	if code != ExitOK || !strings.Contains(stdout, "vllm bench serve") || !strings.Contains(stdout, "ttft") {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}
}
