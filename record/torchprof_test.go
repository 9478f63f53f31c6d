package record

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/synth"
)

// The fake server is this test binary run again as the recorded child, with
// LLMPROF_FAKE_TORCH_SERVER naming its fixture folder: spans.jsonl (OTLP
// JSON requests it exports to the recorder, as vLLM's requests would) and
// kineto/*.pt.trace.json.gz (the traces it "profiles"). It answers vLLM's
// /health, /metrics (a running request once it has served), /start_profile
// and /stop_profile; like SGLang's flush thread it answers the stop at once
// and writes each trace in two halves 300 ms apart, so a recorder that does
// not wait for complete traces reads half a file. SIGINT exits at once,
// abandoning writes in progress, so the traces are complete only if record
// waited for them before stopping the server.
const fakeServerEnv = "LLMPROF_FAKE_TORCH_SERVER"

func TestFakeTorchServer(t *testing.T) {
	fixture := os.Getenv(fakeServerEnv)
	if fixture == "" {
		t.Skip("the fake vLLM server of TestRecordTorchProfiler; runs only as its child")
	}
	os.Exit(fakeTorchServer(fixture, os.Getenv("LLMPROF_FAKE_TORCH_PORT")))
}

func fakeTorchServer(fixture, port string) int {
	var running, profiling atomic.Bool
	outDir := os.Getenv("VLLM_TORCH_PROFILER_DIR")
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		n := 0
		if running.Load() {
			n = 1
		}
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"fake\"} %d\nvllm:num_requests_waiting{model_name=\"fake\"} 0\n", n)
	})
	mux.HandleFunc("POST /start_profile", func(w http.ResponseWriter, _ *http.Request) {
		profiling.Store(true)
		_ = os.WriteFile(filepath.Join(fixture, "started"), nil, 0o644)
	})
	mux.HandleFunc("POST /stop_profile", func(w http.ResponseWriter, _ *http.Request) {
		if !profiling.Swap(false) {
			http.Error(w, "not profiling", http.StatusBadRequest)
			return
		}
		traces, _ := filepath.Glob(filepath.Join(fixture, "kineto", "*.gz"))
		for _, tr := range traces {
			go func() {
				b, _ := os.ReadFile(tr)
				f, err := os.Create(filepath.Join(outDir, filepath.Base(tr)))
				if err != nil {
					return
				}
				defer f.Close()
				_, _ = f.Write(b[:len(b)/2])
				time.Sleep(300 * time.Millisecond)
				_, _ = f.Write(b[len(b)/2:])
			}()
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() { _ = http.Serve(ln, mux) }()
	go func() {
		// Requests arrive a little after readiness; their spans go to the
		// recorder's HTTP receiver, one OTLP JSON request per line.
		time.Sleep(300 * time.Millisecond)
		running.Store(true)
		f, err := os.Open(filepath.Join(fixture, "spans.jsonl"))
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			resp, err := http.Post("http://"+os.Getenv("LLMPROF_OTLP_HTTP")+"/v1/traces", "application/json", bytes.NewReader(sc.Bytes()))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return
			}
			resp.Body.Close()
		}
		_ = os.WriteFile(filepath.Join(fixture, "posted"), nil, 0o644)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return 0
}

// torchFixture writes a simulated run's spans and Kineto traces (one per
// engine, gzip'd, on a GPU-side clock off the OTLP clock) for the fake
// server. 750 ms of serving: about 680 steps and 3,400 tokens, enough
// anchors for every rank's refined fit within its bound; the traces'
// writing, checking (record reads each whole, twice) and decoding cost
// CPU in proportion to the run's length (1.5 s took 0.8 s more).
func torchFixture(t *testing.T) (string, *synth.Run) {
	t.Helper()
	cfg := synth.DefaultConfig(5, 750*time.Millisecond)
	cfg.GPUClock = synth.ClockError{OffsetNs: 1_734_000_000, DriftPPM: 35, JitterNs: 20_000}
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var spans bytes.Buffer
	if err := run.WriteOTLP(&spans, synth.StyleLLM, synth.JSONLines); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "spans.jsonl"), spans.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "kineto"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kt := range run.KinetoTraces(math.MinInt64, math.MaxInt64, kineto.WriteOptions{}) {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		if err != nil {
			t.Fatal(err)
		}
		if err := kt.Write(zw); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kineto", kt.Name+".gz"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, run
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// A fake vLLM recorded with --torch-profiler and stopped by SIGINT in the
// middle of its profile: record stops the profile first, waits for the
// traces to be complete, then stops the server; the capture's manifest lists
// every rank's trace, and analyzing the capture joins the spans with the
// Kineto traces — per-token GPU buckets filled, each step's kernels found
// through its annotation.
func TestRecordTorchProfiler(t *testing.T) {
	fixture, run := torchFixture(t)
	port := freePort(t)
	t.Setenv(fakeServerEnv, fixture)
	t.Setenv("LLMPROF_FAKE_TORCH_PORT", port)
	rt := newRecordTest(t, os.Args[0], "-test.run=^TestFakeTorchServer$", "--", "vllm", "serve", "fake-model", "--port", port)
	rt.opts.TorchProfiler = TorchProfilerOptions{Enabled: true, FlushTimeout: 30 * time.Second}
	rt.opts.StopTimeout = 20 * time.Second
	done := make(chan *Result, 1)
	go func() { done <- rt.run(t) }()
	waitFile(t, filepath.Join(fixture, "started"))
	waitFile(t, filepath.Join(fixture, "posted"))
	// The server marks "started" before it answers the start; the signal
	// waits for record to have read the answer (under load it could come
	// first, cancel the start's request, and record then saw no profile).
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(rt.log.String(), "--torch-profiler: profiling"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("record never saw the profile start\n%s", rt.log)
		}
	}
	rt.signals <- syscall.SIGINT
	var res *Result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("record did not finish after SIGINT\n%s", rt.log)
	}
	c := checkFinal(t, res, StatusInterrupted)
	tp := c.Manifest.External.Torch
	if tp == nil {
		t.Fatalf("no external.torch in the manifest\n%s", rt.log)
	}
	if tp.Server != ServerVLLM || tp.URL != "http://127.0.0.1:"+port || tp.Trigger != "first request" || tp.Error != "" {
		t.Fatalf("torch profiler %+v\n%s", tp, rt.log)
	}
	if c.Manifest.Command.EnvAdded["VLLM_TORCH_PROFILER_DIR"] != absPath(filepath.Join(res.Dir, "torch")) {
		t.Fatalf("env added %v", c.Manifest.Command.EnvAdded)
	}
	if len(tp.Files) != len(run.Engines) {
		t.Fatalf("%d traces, want one per engine (%d): %+v", len(tp.Files), len(run.Engines), tp.Files)
	}
	for _, f := range tp.Files {
		if !f.Complete || f.Bytes == 0 || f.SHA256 == "" {
			t.Fatalf("trace %+v", f)
		}
	}
	if !(tp.ReadyMonoNs > 0 && tp.ReadyMonoNs <= tp.StartMonoNs && tp.StartMonoNs < tp.StopMonoNs) {
		t.Fatalf("ready %d start %d stop %d", tp.ReadyMonoNs, tp.StartMonoNs, tp.StopMonoNs)
	}

	tr, err := ingest.Open(context.Background(), []string{res.Dir}, []ingest.Decoder{&CaptureDecoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kinetoSources := 0
	for _, s := range tr.Sources {
		if s.Format == kineto.Format {
			kinetoSources++
		}
	}
	if kinetoSources != len(run.Engines) {
		t.Fatalf("%d Kineto sources in the capture's trace, want %d", kinetoSources, len(run.Engines))
	}
	ar, err := align.Align(tr, align.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Every rank's clock is fitted to the spans' from the step annotations
	// (1.7 s off, 35 ppm drift in the fixture), within a stated bound.
	fitted := 0
	for _, f := range ar.Fits {
		if f.Kind != "realtime" || len(f.Sources) == 0 || !strings.HasPrefix(f.Domain, "kineto:") {
			continue
		}
		if f.Status == align.StatusCannotAlign || f.BoundNs == nil || !f.Refined {
			t.Fatalf("domain %s: status %s, refined %v, bound %v: %v", f.Domain, f.Status, f.Refined, f.BoundNs, f.Warnings)
		}
		fitted++
		t.Logf("%s: offset %.3f s, drift %.1f ppm, bound %d µs", f.Domain, float64(f.OffsetNs)/1e9, f.DriftPPM, *f.BoundNs/1000)
	}
	if fitted != len(run.Engines) {
		t.Fatalf("%d Kineto clock domains fitted, want %d", fitted, len(run.Engines))
	}
	res2 := attribution.Analyze(tr, attribution.Options{Alignment: ar})
	var tokens int
	var gpu int64
	res2.EachToken(func(tb *attribution.TokenBreakdown) {
		tokens++
		gpu += tb.Buckets[attribution.BucketGPUGEMM] + tb.Buckets[attribution.BucketGPUAttention]
	})
	if tokens == 0 || gpu == 0 {
		t.Fatalf("%d tokens, %d ns of GPU GEMM+attention in their buckets", tokens, gpu)
	}
	viaNVTX := 0
	for _, st := range res2.Steps {
		if st.OpsVia == attribution.OpsNVTX {
			viaNVTX++
		}
	}
	if viaNVTX == 0 {
		t.Fatalf("no step found its kernels through its annotation (%d steps)", len(res2.Steps))
	}
	t.Logf("%d tokens, %d steps (%d through annotations), %.1f ms of GPU GEMM+attention", tokens, len(res2.Steps), viaNVTX, float64(gpu)/1e6)
}

func TestDetectServerAndURL(t *testing.T) {
	for _, tc := range []struct {
		argv        []string
		server, url string
	}{
		{[]string{"vllm", "serve", "m", "--port", "9000"}, ServerVLLM, "http://127.0.0.1:9000"},
		{[]string{"/opt/venv/bin/vllm", "serve", "m"}, ServerVLLM, "http://127.0.0.1:8000"},
		{[]string{"python3", "-m", "vllm.entrypoints.openai.api_server", "--host", "0.0.0.0", "--port=8100"}, ServerVLLM, "http://127.0.0.1:8100"},
		{[]string{"python", "-m", "sglang.launch_server", "--model-path", "m", "--host", "10.0.0.5"}, ServerSGLang, "http://10.0.0.5:30000"},
		{[]string{"sglang", "serve", "--port", "31000"}, ServerSGLang, "http://127.0.0.1:31000"},
		{[]string{"python", "serve.py", "--vllm-like"}, "", ""},
	} {
		got := DetectServer(tc.argv)
		if got != tc.server {
			t.Errorf("%q: server %q, want %q", tc.argv, got, tc.server)
			continue
		}
		if got != "" {
			if u := serverURL(got, tc.argv); u != tc.url {
				t.Errorf("%q: url %q, want %q", tc.argv, u, tc.url)
			}
		}
	}
}

// SGLang: the folder goes both in SGLANG_TORCH_PROFILER_DIR and in
// /start_profile's body, with the options; /metrics' SGLang gauges trigger
// the start.
func TestTorchProfilerSGLangStart(t *testing.T) {
	var body map[string]any
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 0.0\nsglang:num_queue_reqs{model_name=\"m\"} 2.0\n")
	})
	mux.HandleFunc("POST /start_profile", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&body)
	})
	started := make(chan struct{}, 1)
	event := func(kind, _ string) {
		if kind == "torch_profiler_start" {
			started <- struct{}{}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	capture := t.TempDir()
	var log syncBuffer
	tp, err := newTorchProfiler(TorchProfilerOptions{Enabled: true, WithStack: true, RecordShapes: true, WithMemory: true},
		[]string{"python", "-m", "sglang.launch_server", "--port", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}, capture, &log, event)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(absPath(capture), "torch")
	if env := tp.env(); len(env) != 1 || env["SGLANG_TORCH_PROFILER_DIR"] != dir {
		t.Fatalf("env %v", env)
	}
	tp.run(context.Background())
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatalf("no /start_profile\n%s", log.String())
	}
	info := tp.finish(capture)
	want := map[string]any{"output_dir": dir, "activities": []any{"CPU", "GPU", "MEM"}, "with_stack": true, "record_shapes": true}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Fatalf("start body %v, want %v", body, want)
	}
	if info.Trigger != "first request" || info.Dir != "torch" || info.Error != "the server wrote no trace into torch" {
		t.Fatalf("info %+v", info)
	}
}

// checkValue accepts and refuses what decoding into a json.RawMessage does,
// with the same error, and reads as far: complete values (with trailing
// bytes left unread), truncated ones, bad syntax, nothing at all.
func TestCheckValueAsRawMessage(t *testing.T) {
	for _, in := range []string{
		`{"traceEvents": [{"ph": "X", "ts": 1.5, "args": {"a": [1, 2, null]}}]}`,
		`  [1, 2, 3]  trailing garbage`,
		`"a string"`,
		`{"traceEvents": [{"ph": "X"`,
		`{"a": 1,}`,
		`{"a": tru}`,
		``,
		`   `,
		`}`,
	} {
		want := json.NewDecoder(strings.NewReader(in))
		var raw json.RawMessage
		wantErr := want.Decode(&raw)
		got := json.NewDecoder(strings.NewReader(in))
		gotErr := checkValue(got)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || got.InputOffset() != want.InputOffset() {
			t.Errorf("%q: error %v at %d, want %v at %d", in, gotErr, got.InputOffset(), wantErr, want.InputOffset())
		}
	}
}
