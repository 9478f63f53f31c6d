// Command otlpanalyze is the two halves of bench/otlp.sh's analyze mode: the
// reference, the OpenTelemetry Collector's pdata decoding a file alone, and a
// profiled run of what `llmprof analyze --format json` does with it.
//
//	otlpanalyze pdata FILE                              decode FILE with pdata (framed protobuf or JSON Lines); print the span count
//	otlpanalyze analyze [-cpuprofile F] [-memprofile F] [-n N] [-spill] FILE     run analyze's pipeline and JSON writer N times, profiling into F; print the bytes allocated a run
//	otlpanalyze cputime CMD ARG...                       run CMD, its output discarded; print its CPU seconds (user + system, to the microsecond)
//
// The script times the llmprof binary itself; the analyze subcommand is for
// finding where that time goes (go tool pprof F). -spill runs the pipeline as
// the binary does (cmd/llmprof/root.go): under the default memory limit with
// spilling on, which sets the collector's ceiling (internal/driver/gc.go);
// without it the collector runs less often than in the binary.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/llmprof/llmprof/bench/internal/proc"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/internal/memlimit"
	"github.com/llmprof/llmprof/internal/spill"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "otlpanalyze:", err)
		os.Exit(1)
	}
}

const usage = "usage: otlpanalyze pdata FILE | otlpanalyze analyze [-cpuprofile F] [-memprofile F] [-n N] [-spill] FILE | otlpanalyze cputime CMD [ARG]"

var errUsage = errors.New(usage)

func run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "cputime":
		// /usr/bin/time reports to the hundredth of a second, 4% of a
		// 0.25 s run; the rusage the kernel keeps is finer.
		if len(args) < 2 {
			return errUsage
		}
		cmd := exec.Command(args[1], args[2:]...)
		if err := cmd.Run(); err != nil {
			return err
		}
		fmt.Fprintf(w, "%.6f\n", (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
		return nil
	case "pdata":
		if len(args) != 2 {
			return errUsage
		}
		n, err := pdataDecode(args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: %d spans (pdata)\n", args[1], n)
		return nil
	case "analyze":
		fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
		profile := fs.String("cpuprofile", "", "write a CPU profile to this file")
		memprofile := fs.String("memprofile", "", "write an allocation profile (every allocation of the N runs) to this file")
		n := fs.Int("n", 1, "runs")
		spilling := fs.Bool("spill", false, "spill under the default memory limit, as llmprof does")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *spilling {
			set, err := memlimit.Resolve(memlimit.Limit{}, false, os.Getenv, memlimit.System())
			if err != nil {
				return err
			}
			set.Apply()
			release, err := spill.Enable("")
			if err != nil {
				return err
			}
			defer release()
		}
		if fs.NArg() != 1 {
			return errUsage
		}
		stop, err := proc.StartCPUProfile(*profile)
		if err != nil {
			return err
		}
		defer stop()
		if *memprofile != "" {
			runtime.MemProfileRate = 64 << 10
		}
		before := allocated()
		for i := 0; i < *n; i++ {
			if err := analyze(fs.Arg(0), io.Discard); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "%s: %.1f MB allocated a run (runtime/metrics %s, %d runs)\n", fs.Arg(0), float64(allocated()-before)/1e6/float64(max(*n, 1)), allocsMetric, *n)
		if *memprofile != "" {
			// The profile is as of the last collection: one more
			// brings in the last run's allocations.
			runtime.GC()
			f, err := os.Create(*memprofile)
			if err != nil {
				return err
			}
			defer f.Close()
			return pprof.Lookup("allocs").WriteTo(f, 0)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q; %s", args[0], usage)
}

const allocsMetric = "/gc/heap/allocs:bytes"

// allocated is the bytes allocated on the heap so far.
func allocated() uint64 {
	s := []metrics.Sample{{Name: allocsMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// pdataDecode reads path whole and decodes it the way the Collector's file
// exporter wrote it: 4-byte big-endian length-prefixed protobuf payloads, or
// one OTLP/JSON document a line (a name ending in .jsonl or .json).
func pdataDecode(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	spans := 0
	if strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".json") {
		u := &ptrace.JSONUnmarshaler{}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<30)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			td, err := u.UnmarshalTraces(sc.Bytes())
			if err != nil {
				return 0, err
			}
			spans += td.SpanCount()
		}
		return spans, sc.Err()
	}
	u := &ptrace.ProtoUnmarshaler{}
	for len(data) > 0 {
		if len(data) < 4 {
			return 0, fmt.Errorf("%s: truncated frame header", path)
		}
		size := int(binary.BigEndian.Uint32(data))
		if len(data) < 4+size {
			return 0, fmt.Errorf("%s: truncated frame", path)
		}
		td, err := u.UnmarshalTraces(data[4 : 4+size])
		if err != nil {
			return 0, err
		}
		spans += td.SpanCount()
		data = data[4+size:]
	}
	return spans, nil
}

// analyze is `llmprof analyze --format json` with default options: the
// pipeline, the report, and its JSON.
func analyze(path string, w io.Writer) error {
	a, err := driver.Run(context.Background(), []string{path}, driver.Options{})
	if err != nil {
		return err
	}
	return a.Report("bench").WriteJSON(w)
}
