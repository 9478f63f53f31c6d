package driver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/internal/outfile"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/synth"
)

// DemoOptions are the settings of `llmprof demo` (cmd/llmprof/demo.go),
// as its flags give them.
type DemoOptions struct {
	Dir      string
	Seed     int64
	Noise    int64
	Duration time.Duration
	// Style and Encoding name the span conventions (llmprof, vllm,
	// vllm-server) and the OTLP file form (jsonl, json, proto,
	// proto-framed).
	Style, Encoding string
	Gzip            bool
	// NsysWindow is how much of the run the simulated Nsight Systems capture
	// covers (0: none); it starts a third of the way into the run.
	NsysWindow time.Duration
	CUDAGraphs bool
	// Kineto writes the GPU capture as PyTorch profiler traces (one per
	// engine) instead of an Nsight Systems export.
	Kineto bool
	// Metrics adds injected infrastructure episodes and writes the vLLM,
	// dcgm-exporter and node_exporter scrapes of the run (synth/metrics.go).
	Metrics bool
	// Slow slows kernel categories in the run ("attention=1.6"), a
	// regression with known truth for diff (synth.ParseSlowdown).
	Slow string
	// Log gets one line for each file written.
	Log io.Writer
}

// demoStyles and demoEncodings are the names --style and --encoding take.
var (
	demoStyles    = map[string]synth.Style{"llmprof": synth.StyleLLM, "vllm": synth.StyleVLLM, "vllm-server": synth.StyleVLLMServer}
	demoEncodings = map[string]struct {
		enc synth.Encoding
		ext string
	}{
		"jsonl": {synth.JSONLines, ".jsonl"}, "json": {synth.JSONDoc, ".json"},
		"proto": {synth.Proto, ".pb"}, "proto-framed": {synth.ProtoFramed, ".pbf"},
	}
)

// demoConfig is the simulated run the options ask for: synth.DemoConfig,
// with a GPU clock to align, and the episodes and slowdowns asked for. A
// mistake in the options is an *OptionError.
func demoConfig(o DemoOptions) (synth.Config, map[ingest.KernelCategory]float64, error) {
	if o.Duration <= 0 {
		return synth.Config{}, nil, optionErrorf("--duration must be positive")
	}
	cfg := synth.DemoConfig(o.Seed, o.Duration)
	cfg.NoiseSeed = o.Noise
	cfg.GPUClock = synth.ClockError{OffsetNs: 1_734_000_000, DriftPPM: 35, JitterNs: 20_000}
	cfg.CUDAGraphs = o.CUDAGraphs
	if o.Metrics {
		cfg.AddEpisodes()
	}
	if o.Slow == "" {
		return cfg, nil, nil
	}
	slow, err := synth.ParseSlowdown(o.Slow)
	if err != nil {
		return cfg, nil, optionErrorf("--slow: %v", err)
	}
	cfg.Slow(slow)
	return cfg, slow, nil
}

// WriteDemo simulates the demo run and writes it into o.Dir: the OTLP
// trace, the GPU capture of o.NsysWindow (an Nsight Systems export, or
// PyTorch profiler traces), and with o.Slow and o.Metrics their truth and
// the scrapes. Files are written inside o.Dir only (a symbolic link planted
// at a name is replaced, never followed). A mistake in the options is an
// *OptionError.
func WriteDemo(o DemoOptions) error {
	style, ok := demoStyles[o.Style]
	if !ok {
		return optionErrorf("--style must be llmprof, vllm or vllm-server, not %q", o.Style)
	}
	e, ok := demoEncodings[o.Encoding]
	if !ok {
		return optionErrorf("--encoding must be jsonl, json, proto or proto-framed, not %q", o.Encoding)
	}
	cfg, slow, err := demoConfig(o)
	if err != nil {
		return err
	}
	// A long run's ops and tokens are most of the heap and live to the
	// end, and what the writers allocate dies at once: the collector runs
	// at a quarter of the live heap, not at all of it again (its marking
	// skips the ops, which hold no pointer), so that hours of simulation
	// fit beside their own live data. The pipeline's pacer does it
	// (tightGC: a GOGC you set stands, and a short run's small heap is
	// not collected below the pacer's floor).
	gc := tightGC(demoGCPercent)
	defer gc.release()
	run, err := synth.Generate(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	name := filepath.Join(o.Dir, "trace.otlp"+e.ext)
	if err := writeDemoFile(name, o.Gzip, func(w io.Writer) error { return run.WriteOTLP(w, style, e.enc) }); err != nil {
		return err
	}
	if o.Gzip {
		name += ".gz"
	}
	fmt.Fprintf(o.Log, "wrote %s: %d requests, %d engine steps, %d GPU ops simulated\n",
		name, len(run.Requests), len(run.Steps), len(run.Ops))
	if err := writeDemoGPU(o, cfg, run); err != nil {
		return err
	}
	if slow != nil {
		if err := writeDemoSlowdown(o, slow); err != nil {
			return err
		}
	}
	if o.Metrics {
		return writeDemoMetrics(o, run)
	}
	return nil
}

// demoGCPercent is the collector's GOGC while the demo runs.
const demoGCPercent = 25

// demoGPUPiece is how much GPU time of the demo's nsys export is built at
// once: about 330 k GPU ops of the demo's busiest engines, 16 MB.
const demoGPUPiece = int64(20 * time.Second)

// writeDemoGPU writes the GPU capture of o.NsysWindow, from a third of the
// way into the run: PyTorch profiler traces with o.Kineto, else an Nsight
// Systems export.
func writeDemoGPU(o DemoOptions, cfg synth.Config, run *synth.Run) error {
	if o.NsysWindow <= 0 {
		return nil
	}
	from := cfg.Start + o.Duration.Nanoseconds()/3
	to := from + o.NsysWindow.Nanoseconds()
	if o.Kineto {
		for _, kt := range run.KinetoTraces(from, to, kineto.WriteOptions{}) {
			path := filepath.Join(o.Dir, kt.Name)
			if err := writeDemoFile(path, o.Gzip, kt.Write); err != nil {
				return err
			}
			if o.Gzip {
				path += ".gz"
			}
			fmt.Fprintf(o.Log, "wrote %s: %s of the PyTorch profiler's capture of engine pid %d\n", path, o.NsysWindow, kt.Pid)
		}
		return nil
	}
	// Written in pieces, so that hours of capture never sit in memory
	// whole beside the simulation: the same bytes as the trace written
	// whole (nsys.WriteSQLiteParts).
	head, parts := run.GPUTraceParts(from, to, demoGPUPiece)
	var ops, calls int
	counted := func(yield func(*ingest.Trace) error) error {
		ops, calls = 0, 0
		return parts(func(p *ingest.Trace) error {
			ops, calls = ops+len(p.GPUOps), calls+p.CPURecordCount()
			return yield(p)
		})
	}
	path := filepath.Join(o.Dir, "gpu.nsys.sqlite")
	if err := nsys.WriteSQLiteParts(path, head, counted, nsys.WriteOptions{}); err != nil {
		return err
	}
	if o.Gzip {
		var err error
		if path, err = gzipFile(path); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Log, "wrote %s: %s of GPU activity, %d GPU ops, %d CUDA calls and NVTX ranges\n",
		path, o.NsysWindow, ops, calls)
	return nil
}

// writeDemoSlowdown writes the truth of --slow: each slowed category's key
// and its factor.
func writeDemoSlowdown(o DemoOptions, slow map[ingest.KernelCategory]float64) error {
	truth := map[string]float64{}
	for c, f := range slow {
		truth[c.Info().Key] = f
	}
	path := filepath.Join(o.Dir, ".slowdown.json")
	if err := outfile.Write(path, outfile.Options{}, func(w *bufio.Writer) error {
		return json.NewEncoder(w).Encode(truth)
	}); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "wrote %s: kernels slowed by category (the truth a diff against an unslowed run should find)\n", path)
	return nil
}

// writeDemoMetrics writes the run's scrapes and the episodes' truth.
func writeDemoMetrics(o DemoOptions, run *synth.Run) error {
	dir := filepath.Join(o.Dir, "metrics")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// MkdirAll accepts a link to a directory; the demo writes only inside
	// its own directory.
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory of its own (a symbolic link?); the demo writes only inside %s", dir, o.Dir)
	}
	paths, err := run.WriteMetrics(dir, time.Second)
	if err != nil {
		return err
	}
	// Hidden, so that `llmprof analyze DIR` does not try to read it.
	truth := filepath.Join(o.Dir, ".episodes.json")
	if err := writeDemoFile(truth, false, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(run.EpisodeTruths())
	}); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "wrote %s: a scrape a second of vLLM, dcgm-exporter and node_exporter; the %d injected episodes in %s\n",
		strings.Join(paths, ", "), len(run.Config.Episodes), truth)
	return nil
}

// gzipFile replaces path by path.gz.
func gzipFile(path string) (string, error) {
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out := path + ".gz"
	if err := writeDemoFile(path, true, func(w io.Writer) error { _, err := io.Copy(w, in); return err }); err != nil {
		return "", err
	}
	return out, os.Remove(path)
}

// writeDemoFile writes a file inside the demo's directory, at path (path.gz,
// compressed, with gz): a symbolic link planted at its name is replaced,
// never followed out of the directory.
func writeDemoFile(path string, gz bool, write func(io.Writer) error) error {
	if !gz {
		return outfile.Write(path, outfile.Options{InDir: true}, func(w *bufio.Writer) error { return write(w) })
	}
	return outfile.Write(path+".gz", outfile.Options{InDir: true}, func(w *bufio.Writer) error {
		zw := gzip.NewWriter(w)
		if err := write(zw); err != nil {
			return err
		}
		return zw.Close()
	})
}

// optionErrorf returns an *OptionError with a formatted message.
func optionErrorf(format string, args ...any) error {
	return &OptionError{fmt.Errorf(format, args...)}
}
