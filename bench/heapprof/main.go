// Command heapprof runs the analysis pipeline (internal/driver.Run, as
// `llmprof analyze` does) on its inputs and writes the heap profile of the
// moment the live heap peaked, for `go tool pprof -sample_index=inuse_space`.
// A sampler reads the live heap after each garbage collection
// (runtime/metrics) and snapshots the heap profile whenever it is the
// largest so far; the profile is as of that collection.
//
//	go run ./bench/heapprof -o peak.pprof [-cpu cpu.pprof] [-spill] [-requests-only] [-no-tenants] INPUT...
//
// -requests-only is the pipeline of `llmprof tenants`; -no-tenants that of
// `export` (the tenant regression skipped); -cpu also writes a CPU profile
// of the whole run. -spill runs it as cmd/llmprof/root.go does: under the
// default memory limit (internal/memlimit: GOMEMLIMIT, else DefaultPercent
// of the usable memory) with spilling on (internal/spill) in the system's
// temporary directory, so that the largest pointer-free tables live in
// spill files, outside the live heap; the line printed at the end then also
// says the most bytes that were in spill files at once.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/llmprof/llmprof/bench/internal/proc"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/internal/memlimit"
	"github.com/llmprof/llmprof/internal/spill"
)

func main() {
	out := flag.String("o", "peak.pprof", "where the heap profile of the peak goes")
	requestsOnly := flag.Bool("requests-only", false, "skip the GPU section and the token summary (the tenants command)")
	noTenants := flag.Bool("no-tenants", false, "skip the tenant regression")
	every := flag.Duration("every", 20*time.Millisecond, "how often the live heap is read")
	cpu := flag.String("cpu", "", "where a CPU profile of the run goes (none: no profile)")
	spilling := flag.Bool("spill", false, "spill the largest tables to files under the default memory limit, as llmprof does")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: heapprof [-o FILE] [-cpu FILE] [-spill] [-requests-only] [-no-tenants] INPUT...")
		os.Exit(2)
	}
	release := func() {}
	if *spilling {
		// As cmd/llmprof/root.go: the memory limit first (the pipeline
		// sets the spill budget from it), then spilling on.
		set, err := memlimit.Resolve(memlimit.Limit{}, false, os.Getenv, memlimit.System())
		if err == nil {
			set.Apply()
			release, err = spill.Enable("")
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "heapprof: -spill:", err)
			os.Exit(1)
		}
	}
	s := newSampler()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(*every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				s.sample()
			}
		}
	})
	stopProfile, err := proc.StartCPUProfile(*cpu)
	if err != nil {
		fmt.Fprintln(os.Stderr, "heapprof:", err)
		os.Exit(1)
	}
	start := time.Now()
	_, err = driver.Run(context.Background(), flag.Args(), driver.Options{RequestsOnly: *requestsOnly, Tenants: driver.TenantOptions{Skip: *noTenants}})
	if perr := stopProfile(); err == nil {
		err = perr
	}
	close(stop)
	wg.Wait()
	spilled := spill.Read()
	release()
	if err != nil {
		fmt.Fprintln(os.Stderr, "heapprof:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, s.profile.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "heapprof:", err)
		os.Exit(1)
	}
	fmt.Printf("peak live heap %.1f MB at %.1f s (of %.1f s); profile in %s\n", float64(s.peak)/1e6, s.at.Seconds(), time.Since(start).Seconds(), *out)
	if *spilling {
		fmt.Printf("spill files: at most %.1f MB at once, %d drops (%.1f MB advised away), %d of the program's pages, %d drops behind passes (%.1f MB)\n", float64(spilled.Peak)/1e6, spilled.Drops, float64(spilled.DroppedBytes)/1e6, spilled.ProgramDrops, spilled.BehindDrops, float64(spilled.BehindBytes)/1e6)
	}
}

// sampler keeps the heap profile of the largest live heap seen.
type sampler struct {
	metric  []metrics.Sample
	gcs     uint64
	peak    uint64
	at      time.Duration
	start   time.Time
	profile bytes.Buffer
}

func newSampler() *sampler {
	return &sampler{start: time.Now(), metric: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}}
}

// sample snapshots the heap profile when a collection has finished since the
// last look and left more live heap than any before.
func (s *sampler) sample() {
	metrics.Read(s.metric)
	live, gcs := s.metric[0].Value.Uint64(), s.metric[1].Value.Uint64()
	if gcs == s.gcs || live <= s.peak {
		s.gcs = gcs
		return
	}
	s.gcs, s.peak, s.at = gcs, live, time.Since(s.start)
	s.profile.Reset()
	if err := pprof.Lookup("heap").WriteTo(&s.profile, 0); err != nil {
		fmt.Fprintln(os.Stderr, "heapprof: heap profile:", err)
	}
	runtime.Gosched()
}
