// Command recordgpu reads a capture that `llmprof record` made on a GPU host
// and prints what bench/record-gpu.sh checks: how many NVML samples per
// second each table holds, what one device poll costs, and whether NVML's
// own timestamps (ring-buffer samples, per-process utilization) are
// CLOCK_REALTIME microseconds, as the capture reader assumes. It reads the
// capture the way the pipeline's first stage does, through package record.
//
//	recordgpu [-json] run.llmprof
//	recordgpu -cupti run.llmprof   # a `record --cupti` capture
//
// It exits 1 when a check fails: device rows far below the configured rate,
// or NVML timestamps that do not track the realtime clock. With -cupti it
// checks the CUPTI activity instead (record/cupti.CheckTrace: records of
// every kind, kernels joined to their launches, every process flushed at its
// end), aligns the capture and prints the CUPTI clock's fit and bound, and
// counts kernels that start before their launching call after alignment.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/record"
	"github.com/llmprof/llmprof/record/cupti"
)

func main() {
	asJSON := flag.Bool("json", false, "print JSON")
	withCUPTI := flag.Bool("cupti", false, "check the capture's CUPTI activity (record --cupti)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: recordgpu [-json] run.llmprof")
		os.Exit(2)
	}
	if *withCUPTI {
		os.Exit(checkCUPTI(flag.Arg(0)))
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

func checkCUPTI(dir string) int {
	tr, err := ingest.Open(context.Background(), []string{dir}, []ingest.Decoder{&record.CaptureDecoder{}}, ingest.OpenOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordgpu:", err)
		return 1
	}
	c := cupti.CheckTrace(tr)
	fmt.Printf("cupti     %d process file(s): %d kernels (%d joined to their launch), %d memcpy, %d memset, %d sync, %d runtime and %d driver calls\n",
		c.Files, c.Kernels, c.Joined, c.Memcpys, c.Memsets, c.Syncs, c.RuntimeCalls, c.DriverCalls)
	ar, err := align.Align(tr, align.DefaultOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, "recordgpu:", err)
		return 1
	}
	for _, f := range ar.Fits {
		if len(f.Domain) < 6 || f.Domain[:6] != "cupti@" {
			continue
		}
		bound := "none"
		if f.BoundNs != nil {
			bound = fmt.Sprintf("%d ns", *f.BoundNs)
		} else {
			c.Problems = append(c.Problems, "the CUPTI clock has no bound to the realtime clock")
		}
		fmt.Printf("clock     %s: %s, offset %.6f s, drift %.2f ppm, bound %s, %d clock pairs\n",
			f.Domain, f.Status, float64(f.OffsetNs)/1e9, f.DriftPPM, bound, f.Anchors.ClockPair)
	}
	fmt.Printf("causality %d ops checked against their launching call, %d start before it (largest lead %d ns)\n",
		ar.Causality.Checked, ar.Causality.Violations, ar.Causality.LargestNs)
	for _, p := range c.Problems {
		fmt.Println("PROBLEM  ", p)
	}
	if len(c.Problems) > 0 {
		return 1
	}
	fmt.Println("ok")
	return 0
}
