package record

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// The PyTorch profiler that vLLM and SGLang carry (torch.profiler, whose
// CUDA side is Kineto over CUPTI): record points it at a folder inside the
// capture, starts and stops it over the server's HTTP API, and records the
// traces it writes, one per rank, which analyze decodes as Kineto.
//
// The names, read from the servers' sources:
//   - vLLM: VLLM_TORCH_PROFILER_DIR enables the profiler on every worker;
//     VLLM_TORCH_PROFILER_RECORD_SHAPES, _WITH_STACK, _WITH_PROFILE_MEMORY
//     and _WITH_FLOPS are its options; POST /start_profile and POST
//     /stop_profile (which answers once the traces are flushed) drive it;
//     GET /health answers 200 when the server is up; traces are written by
//     torch.profiler.tensorboard_trace_handler with use_gzip:
//     "{worker}.{ms}.pt.trace.json.gz".
//   - SGLang: SGLANG_TORCH_PROFILER_DIR is the default output folder (else
//     /tmp); POST /start_profile takes a JSON body (output_dir, activities,
//     with_stack, record_shapes, num_steps), POST /stop_profile stops it and
//     may answer before the traces are written (a flush thread writes
//     "{profile_id}-TP-{rank}[-DP-…][-PP-…][-EP-…].trace.json.gz"); GET
//     /health.
// Both expose Prometheus gauges of running and waiting requests at
// /metrics, which is how record sees the first request arrive.

// Server kinds.
const (
	ServerVLLM   = "vllm"
	ServerSGLang = "sglang"
)

// TorchProfilerOptions configure `record --torch-profiler`.
type TorchProfilerOptions struct {
	Enabled bool `json:"enabled"`
	// Dir is where the server writes its traces; default torch/ inside the
	// capture. A folder outside the capture is allowed; the manifest then
	// records absolute paths.
	Dir string `json:"dir,omitempty"`
	// Server is vllm or sglang; empty detects it from the command line.
	Server string `json:"server,omitempty"`
	// URL is the server's base URL; empty derives it from the command's
	// --host/--port (defaults: vLLM 8000, SGLang 30000).
	URL string `json:"url,omitempty"`
	// At starts the profile this long after the server is ready; zero
	// starts it when the first request arrives.
	At time.Duration `json:"at,omitempty"`
	// For stops it this long after it started; zero stops it before the
	// server is shut down.
	For time.Duration `json:"for,omitempty"`
	// RecordShapes, WithStack and WithMemory are torch.profiler options.
	RecordShapes bool `json:"record_shapes,omitempty"`
	WithStack    bool `json:"with_stack,omitempty"`
	WithMemory   bool `json:"with_memory,omitempty"`
	// ReadyTimeout bounds the wait for the server's readiness (default
	// 30 min: models load slowly); FlushTimeout the wait for complete
	// traces after the stop (default 10 min: vLLM's docs report minutes
	// for large runs).
	ReadyTimeout time.Duration `json:"ready_timeout"`
	FlushTimeout time.Duration `json:"flush_timeout"`
}

// TorchProfilerInfo is the manifest's account of the profile.
type TorchProfilerInfo struct {
	Server string `json:"server"`
	URL    string `json:"url"`
	// Dir is the trace folder, relative to the capture when inside it.
	Dir string `json:"dir"`
	// Trigger says what started the profile: "first request", "--profile-at".
	Trigger     string `json:"trigger,omitempty"`
	ReadyMonoNs int64  `json:"ready_mono_ns,omitempty"`
	StartMonoNs int64  `json:"start_mono_ns,omitempty"`
	StopMonoNs  int64  `json:"stop_mono_ns,omitempty"`
	// Files are the traces found after the stop.
	Files []TorchTraceFile `json:"files"`
	// Error says what went wrong (server never ready, start refused,
	// traces incomplete); the rest of the capture is unaffected.
	Error string `json:"error,omitempty"`
}

// TorchTraceFile is one rank's trace.
type TorchTraceFile struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256,omitempty"`
	// Complete: the whole file decompresses (gzip) or parses (JSON).
	Complete bool   `json:"complete"`
	Error    string `json:"error,omitempty"`
}

// DetectServer names the server a command line runs: vllm for `vllm serve`
// or `python -m vllm.entrypoints…`, sglang for `python -m
// sglang.launch_server` or `sglang serve`; "" if neither.
func DetectServer(argv []string) string {
	for _, a := range argv {
		base := filepath.Base(a)
		switch {
		case base == "vllm" || strings.HasPrefix(a, "vllm.entrypoints"):
			return ServerVLLM
		case base == "sglang" || strings.HasPrefix(a, "sglang.launch_server") || strings.HasPrefix(a, "sglang.srt"):
			return ServerSGLang
		}
	}
	return ""
}

// serverURL derives the base URL from --host and --port in the command
// line (either form: --port 8000, --port=8000).
func serverURL(server string, argv []string) string {
	host, port := "127.0.0.1", "8000"
	if server == ServerSGLang {
		port = "30000"
	}
	for i, a := range argv {
		for _, name := range []string{"--port", "--host"} {
			v, ok := "", false
			if a == name && i+1 < len(argv) {
				v, ok = argv[i+1], true
			} else if strings.HasPrefix(a, name+"=") {
				v, ok = strings.TrimPrefix(a, name+"="), true
			}
			if !ok {
				continue
			}
			if name == "--port" {
				port = v
			} else if v != "" && v != "0.0.0.0" && v != "::" {
				host = v
			}
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// torchProfiler drives one server's profiler during a recording.
type torchProfiler struct {
	opts   TorchProfilerOptions
	server string
	url    string
	dir    string // absolute
	log    io.Writer
	event  func(kind, detail string)
	client *http.Client

	mu      sync.Mutex
	info    TorchProfilerInfo
	started bool
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// newTorchProfiler resolves the server, its URL and the trace folder.
func newTorchProfiler(opts TorchProfilerOptions, argv []string, captureDir string, log io.Writer, event func(kind, detail string)) (*torchProfiler, error) {
	server := opts.Server
	if server == "" {
		server = DetectServer(argv)
	}
	switch server {
	case ServerVLLM, ServerSGLang:
	case "":
		return nil, errors.New("--torch-profiler: the command is neither vLLM nor SGLang as far as its command line says; name it with --server vllm|sglang")
	default:
		return nil, fmt.Errorf("--server %q: want vllm or sglang", server)
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 30 * time.Minute
	}
	if opts.FlushTimeout <= 0 {
		opts.FlushTimeout = 10 * time.Minute
	}
	dir := opts.Dir
	if dir == "" {
		dir = filepath.Join(captureDir, "torch")
	}
	dir = absPath(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--torch-profiler: %w", err)
	}
	url := opts.URL
	if url == "" {
		url = serverURL(server, argv)
	}
	url = strings.TrimRight(url, "/")
	tp := &torchProfiler{opts: opts, server: server, url: url, dir: dir, log: log, event: event,
		client: &http.Client{Timeout: 10 * time.Second}, done: make(chan struct{})}
	tp.info = TorchProfilerInfo{Server: server, URL: url, Dir: relOrAbs(captureDir, dir), Files: []TorchTraceFile{}}
	return tp, nil
}

func relOrAbs(base, p string) string {
	if r, err := filepath.Rel(absPath(base), p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return p
}

// env is what the server is told: where to write, and the options.
func (tp *torchProfiler) env() map[string]string {
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	if tp.server == ServerSGLang {
		return map[string]string{"SGLANG_TORCH_PROFILER_DIR": tp.dir}
	}
	env := map[string]string{"VLLM_TORCH_PROFILER_DIR": tp.dir}
	if tp.opts.RecordShapes {
		env["VLLM_TORCH_PROFILER_RECORD_SHAPES"] = b(true)
	}
	if tp.opts.WithStack {
		env["VLLM_TORCH_PROFILER_WITH_STACK"] = b(true)
	}
	if tp.opts.WithMemory {
		env["VLLM_TORCH_PROFILER_WITH_PROFILE_MEMORY"] = b(true)
	}
	return env
}

// run waits for readiness, then for the trigger, starts the profile, and
// stops it after For. It returns when that is done or ctx ends.
func (tp *torchProfiler) run(ctx context.Context) {
	ctx, tp.cancel = context.WithCancel(ctx)
	go func() {
		defer close(tp.done)
		if err := tp.waitReady(ctx); err != nil {
			tp.fail(err)
			return
		}
		trigger, err := tp.waitTrigger(ctx)
		if err != nil {
			tp.fail(err)
			return
		}
		if err := tp.start(ctx, trigger); err != nil {
			tp.fail(err)
			return
		}
		if tp.opts.For > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(tp.opts.For):
			}
			tp.stop(context.Background())
		}
	}()
}

func (tp *torchProfiler) fail(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	tp.mu.Lock()
	if tp.info.Error == "" {
		tp.info.Error = err.Error()
	}
	tp.mu.Unlock()
	tp.event("torch_profiler_error", err.Error())
	fmt.Fprintf(tp.log, "llmprof record: --torch-profiler: %v\n", err)
}

func (tp *torchProfiler) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(tp.opts.ReadyTimeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tp.url+"/health", nil)
		if resp, err := tp.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				tp.mu.Lock()
				tp.info.ReadyMonoNs = monoNow()
				tp.mu.Unlock()
				tp.event("torch_profiler_ready", tp.url+"/health")
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s/health never answered 200 within %s", tp.url, tp.opts.ReadyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Request gauges of /metrics, by server.
var busyGauges = map[string][]string{
	ServerVLLM:   {"vllm:num_requests_running", "vllm:num_requests_waiting"},
	ServerSGLang: {"sglang:num_running_reqs", "sglang:num_queue_reqs"},
}

func (tp *torchProfiler) waitTrigger(ctx context.Context) (string, error) {
	if tp.opts.At > 0 {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(tp.opts.At):
		}
		return "--profile-at " + tp.opts.At.String(), nil
	}
	for {
		if tp.busy(ctx) {
			return "first request", nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// busy reports whether /metrics shows a request running or waiting.
func (tp *torchProfiler) busy(ctx context.Context) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tp.url+"/metrics", nil)
	resp, err := tp.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, g := range busyGauges[tp.server] {
			if !strings.HasPrefix(line, g) || (len(line) > len(g) && line[len(g)] != '{' && line[len(g)] != ' ') {
				continue
			}
			f := strings.Fields(line[strings.LastIndexByte(line, '}')+1:])
			if len(f) == 0 {
				continue
			}
			if v, err := strconv.ParseFloat(f[0], 64); err == nil && v > 0 {
				return true
			}
		}
	}
	return false
}

func (tp *torchProfiler) post(ctx context.Context, path string, body any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tp.url+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// vLLM answers /stop_profile once the traces are flushed: no client
	// timeout on this call, the context bounds it.
	client := *tp.client
	client.Timeout = 0
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s%s: %w", tp.url, path, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s%s: %s: %s", tp.url, path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

func (tp *torchProfiler) start(ctx context.Context, trigger string) error {
	var body any
	if tp.server == ServerSGLang {
		acts := []string{"CPU", "GPU"}
		if tp.opts.WithMemory {
			acts = append(acts, "MEM")
		}
		body = map[string]any{"output_dir": tp.dir, "activities": acts,
			"with_stack": tp.opts.WithStack, "record_shapes": tp.opts.RecordShapes}
	}
	if err := tp.post(ctx, "/start_profile", body); err != nil {
		return err
	}
	tp.mu.Lock()
	tp.started, tp.info.Trigger, tp.info.StartMonoNs = true, trigger, monoNow()
	tp.mu.Unlock()
	tp.event("torch_profiler_start", trigger)
	fmt.Fprintf(tp.log, "llmprof record: --torch-profiler: profiling %s (%s); traces in %s\n", tp.server, trigger, tp.dir)
	return nil
}

// stop stops a running profile (once) and waits for its traces.
func (tp *torchProfiler) stop(ctx context.Context) {
	tp.mu.Lock()
	if !tp.started || tp.stopped {
		tp.mu.Unlock()
		return
	}
	tp.stopped = true
	tp.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, tp.opts.FlushTimeout)
	defer cancel()
	if err := tp.post(ctx, "/stop_profile", nil); err != nil {
		tp.fail(err)
	}
	tp.mu.Lock()
	tp.info.StopMonoNs = monoNow()
	tp.mu.Unlock()
	tp.event("torch_profiler_stop", "")
	tp.waitComplete(ctx)
}

// beforeShutdown runs before the child is told to stop: a running profile
// is stopped and its traces waited for while the server can still write
// them.
func (tp *torchProfiler) beforeShutdown() {
	if tp.cancel != nil {
		tp.cancel()
		<-tp.done
	}
	tp.stop(context.Background())
}

// waitComplete waits until every trace in the folder is complete and no
// file has changed for a moment, or ctx ends. SGLang writes its traces from
// a flush thread after /stop_profile answered, so the folder can still be
// filling.
func (tp *torchProfiler) waitComplete(ctx context.Context) {
	var last string
	stable := 0
	checked := map[string]checkedTrace{}
	for {
		files := tp.scanCached(checked)
		var sig strings.Builder
		all := len(files) > 0
		for _, f := range files {
			fmt.Fprintf(&sig, "%s:%d;", f.Path, f.Bytes)
			all = all && f.Complete
		}
		if sig.String() == last {
			stable++
		} else {
			stable = 0
		}
		last = sig.String()
		if all && stable >= 2 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// isTrace says whether a file name is one the profilers write.
func isTrace(name string) bool {
	return strings.HasSuffix(name, ".trace.json.gz") || strings.HasSuffix(name, ".trace.json") ||
		strings.HasSuffix(name, ".pt.trace.json.gz") || strings.HasSuffix(name, ".pt.trace.json")
}

// scan lists the traces in the folder, checking each one whole.
func (tp *torchProfiler) scan() []TorchTraceFile { return tp.scanCached(nil) }

// checkedTrace is a trace's check (checkTrace) and the size and
// modification time of the file it read.
type checkedTrace struct {
	size int64
	mod  time.Time
	file TorchTraceFile
}

// scanCached is scan that keeps each check in checked and reuses it while
// the file's size and modification time stay the same: waitComplete's
// polls read each unchanged trace once, not on every poll (finish's scan
// reads them all again for the manifest). A nil checked reads every file.
func (tp *torchProfiler) scanCached(checked map[string]checkedTrace) []TorchTraceFile {
	var out []TorchTraceFile
	_ = filepath.WalkDir(tp.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isTrace(d.Name()) {
			return nil
		}
		info, err := d.Info()
		if checked == nil || err != nil {
			out = append(out, checkTrace(p))
			return nil
		}
		c, ok := checked[p]
		if !ok || c.size != info.Size() || !c.mod.Equal(info.ModTime()) {
			c = checkedTrace{size: info.Size(), mod: info.ModTime(), file: checkTrace(p)}
			checked[p] = c
		}
		out = append(out, c.file)
		return nil
	})
	slices.SortFunc(out, func(a, b TorchTraceFile) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// checkTrace reads a trace whole: a gzip stream must end with its trailer
// and decompress to JSON, a plain one must parse.
func checkTrace(p string) TorchTraceFile {
	f := TorchTraceFile{Path: p}
	fh, err := os.Open(p)
	if err != nil {
		f.Error = err.Error()
		return f
	}
	defer fh.Close()
	h := sha256.New()
	var r io.Reader = io.TeeReader(fh, h)
	var zr *gzip.Reader
	if strings.HasSuffix(p, ".gz") {
		if zr, err = gzip.NewReader(r); err != nil {
			f.Error = "gzip: " + err.Error()
			return f
		}
		r = zr
	}
	if err := checkValue(json.NewDecoder(r)); err != nil {
		f.Error = "incomplete: " + err.Error()
		return f
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		f.Error = "incomplete: " + err.Error()
		return f
	}
	_, _ = io.Copy(h, fh)
	st, _ := fh.Stat()
	if st != nil {
		f.Bytes = st.Size()
	}
	f.SHA256 = hex.EncodeToString(h.Sum(nil))
	f.Complete = true
	return f
}

// checkValue reads dec's next JSON value whole and checks its syntax,
// without unmarshalling it. encoding/json's Decoder reads and checks a value
// before it looks at the destination, so a nil pointer costs one scan of the
// value (then an InvalidUnmarshalError), where a json.RawMessage cost two:
// the read and unmarshal's own — 40% of a trace's check. Should a decoder
// refuse nil before reading (nothing read), the value is read into a
// json.RawMessage as before.
func checkValue(dec *json.Decoder) error {
	var none *struct{}
	err := dec.Decode(none)
	var nilDest *json.InvalidUnmarshalError
	if !errors.As(err, &nilDest) {
		return err
	}
	if dec.InputOffset() > 0 {
		return nil
	}
	var v json.RawMessage
	return dec.Decode(&v)
}

// finish records what the folder holds: the manifest's account.
func (tp *torchProfiler) finish(captureDir string) *TorchProfilerInfo {
	if tp.cancel != nil {
		tp.cancel()
		<-tp.done
	}
	files := tp.scan()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	info := tp.info
	info.Files = []TorchTraceFile{}
	incomplete := 0
	for _, f := range files {
		f.Path = relOrAbs(captureDir, f.Path)
		if !f.Complete {
			incomplete++
			if f.Bytes == 0 {
				if st, err := os.Stat(filepath.Join(captureDir, f.Path)); err == nil {
					f.Bytes = st.Size()
				}
			}
		}
		info.Files = append(info.Files, f)
	}
	switch {
	case incomplete > 0 && info.Error == "":
		info.Error = fmt.Sprintf("%d of %d traces incomplete", incomplete, len(files))
	case len(files) == 0 && tp.started && info.Error == "":
		info.Error = "the server wrote no trace into " + info.Dir
	case !tp.started && info.Error == "":
		info.Error = "the profile never started (no request arrived, or the server stopped first)"
	}
	return &info
}
