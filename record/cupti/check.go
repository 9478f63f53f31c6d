package cupti

import (
	"fmt"

	"github.com/llmprof/llmprof/ingest"
)

// Check is what bench/record-gpu.sh verifies of a `record --cupti` capture
// on a GPU host: that the library wrote records of every enabled kind, that
// kernels join their launching calls, and that each process flushed at its
// end.
type Check struct {
	Files                     int
	Kernels, Memcpys, Memsets int
	Syncs, RuntimeCalls       int
	DriverCalls               int
	// Joined counts kernels whose launching API call is in the capture.
	Joined   int
	Problems []string
}

// CheckTrace counts the CUPTI sources' records in a decoded capture and
// names what is wrong: no file, no kernel, fewer than 90% of kernels joined
// to a launching call, a process without its final flush (a
// cupti-no-end warning), dropped records.
func CheckTrace(t *ingest.Trace) *Check {
	c := &Check{}
	mine := map[ingest.SourceID]bool{}
	for i, s := range t.Sources {
		if s.Format == SourceFormat {
			mine[ingest.SourceID(i)] = true
			c.Files++
		}
	}
	calls := t.LaunchCalls()
	for i, o := range t.GPUOps {
		if !mine[o.Source] {
			continue
		}
		switch o.Kind {
		case ingest.OpKernel:
			c.Kernels++
			if calls[i] >= 0 {
				c.Joined++
			}
		case ingest.OpMemcpy:
			c.Memcpys++
		case ingest.OpMemset:
			c.Memsets++
		case ingest.OpSync:
			c.Syncs++
		}
	}
	for _, s := range t.APICalls {
		if !mine[s.Source] {
			continue
		}
		switch s.Origin {
		case ingest.OriginCUDARuntime:
			c.RuntimeCalls++
		case ingest.OriginCUDADriver:
			c.DriverCalls++
		}
	}
	switch {
	case c.Files == 0:
		c.Problems = append(c.Problems, "no CUPTI activity file was decoded")
	case c.Kernels == 0:
		c.Problems = append(c.Problems, "no kernel recorded")
	case c.Joined*10 < c.Kernels*9:
		c.Problems = append(c.Problems, fmt.Sprintf("only %d of %d kernels joined to a launching API call", c.Joined, c.Kernels))
	}
	for _, w := range t.Warnings.List {
		switch w.Code {
		case "cupti-no-end", "cupti-dropped", "capture-cupti":
			c.Problems = append(c.Problems, w.Path+": "+w.Msg)
		}
	}
	return c
}
