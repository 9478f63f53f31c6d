// Command attrtime times what `llmprof analyze` does after the decode in
// attribution's part of it: attribution.Analyze and the report's samples
// (compare.FromAttribution), run again and again on one decoded trace, so
// that a change there can be measured apart from the decode, the tenant
// regression and the JSON writer, which otherwise make up most of the
// spread of a whole run.
//
//	attrtime [-n N] [-cpuprofile F] FILE
//
// It decodes and aligns FILE once (driver.Run, as analyze does), then runs
// the two N times (20 by default) and prints the least and the median CPU
// seconds of one run (user + system of the process, the collector's work
// included). Compare two builds by alternating their processes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/bench/internal/proc"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/internal/driver"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "attrtime:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("attrtime", flag.ContinueOnError)
	n := fs.Int("n", 20, "runs")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the runs to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *n < 1 {
		return fmt.Errorf("usage: attrtime [-n N] [-cpuprofile F] FILE")
	}
	a, err := driver.Run(context.Background(), []string{fs.Arg(0)}, driver.Options{})
	if err != nil {
		return err
	}
	stop, err := proc.StartCPUProfile(*profile)
	if err != nil {
		return err
	}
	defer stop()
	// What runAttribution (internal/driver/analyses.go) gives it for
	// driver.Options{}, the options of the run above.
	opts := attribution.Options{Alignment: a.Align}
	times := make([]float64, 0, *n)
	for range *n {
		start := proc.CPUSeconds()
		res := attribution.Analyze(a.Trace, opts)
		_ = compare.FromAttribution(res)
		times = append(times, proc.CPUSeconds()-start)
	}
	slices.Sort(times)
	fmt.Fprintf(w, "%.4f %.4f\n", times[0], times[len(times)/2])
	return nil
}
