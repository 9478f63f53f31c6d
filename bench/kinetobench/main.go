// Command kinetobench measures the Kineto decoder against the size of its
// input, the way llmprof reads a file: it writes a large synthetic PyTorch
// profiler trace, and decodes one in a fresh process through ingest.Open
// (decode and Validate), reporting throughput and the peak resident set.
// bench/kineto.sh runs it beside python3's json.load of the same file.
//
//	kinetobench gen -o FILE [-mb 300]   write a trace of about mb MiB
//	kinetobench decode FILE             decode FILE; print events, seconds, MB/s, peak RSS and RSS/size
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/llmprof/llmprof/bench/internal/proc"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/synth"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kinetobench:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: kinetobench gen -o FILE [-mb N] | kinetobench decode FILE")
	}
	switch args[0] {
	case "gen":
		fs := flag.NewFlagSet("gen", flag.ContinueOnError)
		out := fs.String("o", "trace.pt.trace.json", "file to write")
		mb := fs.Int("mb", 300, "approximate size in MiB")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return gen(*out, *mb, w)
	case "decode":
		if len(args) != 2 {
			return fmt.Errorf("usage: kinetobench decode FILE")
		}
		return decode(args[1], w)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// gen writes the first engine's GPU side of a synthetic serving run long
// enough for the file to reach about mb MiB: step annotations, a cpu_op
// around every launch, runtime calls, kernels and copies, flows.
func gen(path string, mb int, w io.Writer) error {
	// About 13 MiB of trace per simulated second of the busier engine
	// (measured on seed 1); simulate a little more than needed.
	secs := max(1, int(float64(mb)/13*1.05+0.5))
	run, err := synth.Generate(synth.DefaultConfig(1, time.Duration(secs)*time.Second))
	if err != nil {
		return err
	}
	t := run.GPUTrace()
	pid := run.Engines[0].Pid
	ops := t.Strings.Intern("aten::mm")
	for i := range t.APICalls {
		s := &t.APICalls[i]
		if s.Origin == ingest.OriginCUDARuntime && s.Pid == pid {
			t.Spans = append(t.Spans, ingest.Span{Name: ops, Start: s.Start - 2_000, End: s.End + 1_000, Pid: s.Pid, Tid: s.Tid,
				Origin: ingest.OriginCPUOp, Resource: -1, Scope: -1})
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := kineto.Write(bw, t, kineto.WriteOptions{Pid: pid}); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(w, "wrote %s: %.1f MiB (%d s simulated)\n", path, float64(st.Size())/(1<<20), secs)
	return f.Close()
}

func decode(path string, w io.Writer) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	start := time.Now()
	t, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{kineto.Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		return err
	}
	el := time.Since(start)
	rss, err := proc.PeakRSS()
	if err != nil {
		return err
	}
	size := float64(st.Size())
	fmt.Fprintf(w, "llmprof: %d spans, %d GPU ops in %.3f s: %.1f MB/s; peak RSS %d MiB = %.2f× the file (%d MiB)\n",
		t.CPURecordCount(), len(t.GPUOps), el.Seconds(), size/1e6/el.Seconds(), rss>>20, float64(rss)/size, st.Size()>>20)
	runtime.KeepAlive(t)
	return nil
}
