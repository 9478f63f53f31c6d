// Command recordgpu reads a capture that `llmprof record` made on a GPU host
// and prints what bench/record-gpu.sh checks: how many NVML samples per
// second each table holds, what one device poll costs, and whether NVML's
// own timestamps (ring-buffer samples, per-process utilization) are
// CLOCK_REALTIME microseconds, as the capture reader assumes. It reads the
// capture the way the pipeline's first stage does, through package record.
//
//	recordgpu [-json] run.llmprof
//
// It exits 1 when a check fails: device rows far below the configured rate,
// or NVML timestamps that do not track the realtime clock.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/llmprof/llmprof/record"
)

func main() {
	asJSON := flag.Bool("json", false, "print JSON")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: recordgpu [-json] run.llmprof")
		os.Exit(2)
	}
	c, err := record.OpenCapture(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordgpu:", err)
		os.Exit(1)
	}
	rep, err := record.CheckNVML(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordgpu:", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		printText(rep)
	}
	if len(rep.Problems) > 0 {
		os.Exit(1)
	}
}

func printText(r *record.NVMLCheck) {
	fmt.Printf("capture   %s (%s), %.1f s, %d GPU(s), NVML %s\n", r.Capture, r.Status, r.Seconds, r.GPUs, r.NVML)
	if r.NVML == "unavailable" {
		for _, p := range r.Problems {
			fmt.Println("PROBLEM  ", p)
		}
		return
	}
	for _, rt := range append([]record.Rate{r.Device, r.GPM, r.Process}, r.Buffered...) {
		if rt.Name == "" {
			continue
		}
		fmt.Printf("rate      %-28s %8d rows  %8.1f/s  %8.1f/s per GPU\n", rt.Name, rt.Rows, rt.PerSecond, rt.PerGPUPerSecond)
	}
	fmt.Printf("poll      one device poll p50 %.3f ms, p99 %.3f ms\n", r.PollLatencyP50Ms, r.PollLatencyP99Ms)
	fmt.Printf("clock     ring buffer: realtime − nvml_ts %.1f / %.1f / %.1f ms (min/p50/max over %d drains)\n",
		r.BufferedLag.MinMs, r.BufferedLag.P50Ms, r.BufferedLag.MaxMs, r.BufferedLag.N)
	fmt.Printf("clock     process util: realtime − nvml_ts %.1f / %.1f / %.1f ms (min/p50/max over %d drains)\n",
		r.ProcessLag.MinMs, r.ProcessLag.P50Ms, r.ProcessLag.MaxMs, r.ProcessLag.N)
	fmt.Printf("drops     %d rows dropped, %d ticks overrun\n", r.Drops, r.Overruns)
	for _, p := range r.Problems {
		fmt.Println("PROBLEM  ", p)
	}
	if len(r.Problems) == 0 {
		fmt.Println("ok")
	}
}
