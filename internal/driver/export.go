package driver

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/export"
	"github.com/llmprof/llmprof/ingest"
)

// PerfettoOptions places the run on Perfetto's tracks: requests per tenant,
// their stage spans under them, arrows from OTLP spans to the NVTX ranges
// mirroring them and from each request to the first engine step that served
// it; the inputs and the alignment go into the file's metadata.
func PerfettoOptions(inputs []string, a *Result) export.PerfettoOptions {
	t, res := a.Trace, a.Align
	var links []export.Link
	for _, m := range align.Mirrors(t) {
		links = append(links, export.Link{From: m.OTLP, To: m.NVTX})
	}
	// Requests are drawn per tenant, their stage spans under them, with an
	// arrow from each request to the first engine step that served it.
	place := map[ingest.SpanID]export.Placement{}
	firstStep := map[int]int{}
	for si, st := range a.Attr.Steps {
		for _, r := range st.Requests {
			if _, ok := firstStep[int(r)]; !ok {
				firstStep[int(r)] = si
			}
		}
	}
	for ri, r := range a.Attr.Requests {
		place[t.Spans[r.Span].ID] = export.Placement{Group: "tenant " + r.Tenant, Track: "requests " + r.Model}
		if si, ok := firstStep[ri]; ok {
			links = append(links, export.Link{From: r.Span, To: a.Attr.Steps[si].Span})
		}
	}
	// Stages that only attributes show (vLLM's latency attributes) are
	// slices too, like the stage spans of other servers.
	var stages []export.StageSlice
	for _, r := range a.Attr.Requests {
		for _, sg := range r.DerivedSegments() {
			stages = append(stages, export.StageSlice{Span: r.Span, Name: sg.Stage.String(), From: sg.From, To: sg.To})
		}
	}
	return export.PerfettoOptions{
		Stages: stages,
		Grouping: func(t *ingest.Trace, i int) (export.Placement, bool) {
			p, ok := place[t.Spans[i].ID]
			return p, ok
		},
		Links: links,
		Metadata: map[string]any{
			"inputs":    inputs,
			"alignment": res.Fits,
			"causality": res.Causality,
		},
	}
}

// ParquetPartition fills the partition columns: the run id (default: the
// first input's base name without extensions), the host (default: the host
// identity, ingest.Source.Host, of the reference clock's sources) and the date (the first request's UTC day, when
// the reference clock is a wall clock).
func ParquetPartition(inputs []string, a *Result, runID, host string) export.ParquetOptions {
	if runID == "" && len(inputs) > 0 {
		runID = filepath.Base(filepath.Clean(inputs[0]))
		if i := strings.IndexByte(runID, '.'); i > 0 {
			runID = runID[:i]
		}
	}
	var realtime bool
	for _, f := range a.Align.Fits {
		if f.Status != align.StatusReference {
			continue
		}
		realtime = f.Kind == ingest.ClockRealtime.String()
		for _, s := range a.Trace.Sources {
			if s.Clock.Name == f.Domain && host == "" {
				host = s.Host
			}
		}
	}
	o := export.ParquetOptions{RunID: runID, Host: host}
	if realtime && len(a.Attr.Requests) > 0 {
		first := a.Attr.Requests[0].Arrival
		for _, r := range a.Attr.Requests {
			first = min(first, r.Arrival)
		}
		o.Date = time.Unix(0, first).UTC()
	}
	return o
}
