package driver

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/report"
)

// Stats computes `llmprof stats`: the nsys stats report name names
// (nsys.FindReport: "cuda_gpu_kern_sum", optionally with ":base" or
// ":mangled") over each file, printing each file's warnings to log as it
// goes. An unknown report, or a trace report asked of a PyTorch profiler
// trace, is an *OptionError.
func Stats(ctx context.Context, name string, files []string, log io.Writer) (report.Stats, error) {
	rep, ropts, err := nsys.FindReport(name)
	if err != nil {
		return report.Stats{}, &OptionError{err}
	}
	dec := rep.Decoder(ropts)
	out := report.Stats{Report: rep}
	for _, path := range files {
		f, err := statsFile(ctx, rep, ropts, dec, path)
		if err != nil {
			return out, err
		}
		for _, w := range f.Warnings {
			fmt.Fprintln(log, "warning: "+w.String())
		}
		out.Files = append(out.Files, f)
	}
	return out, nil
}

// statsFile is the report over one file, decoded and summarized under the
// budget analyze keeps for an input of its size (gcHold.budget): past it
// the GPU ops and API calls go to a spill file, as analyze's do.
func statsFile(ctx context.Context, rep *nsys.Report, ropts nsys.ReportOptions, dec nsys.Decoder, path string) (report.StatsFile, error) {
	gc := tightGC(runGCPercent)
	defer gc.release()
	if fi, err := os.Stat(path); err == nil {
		gc.budget(fi.Size())
	}
	t, err := decodeStatsInput(ctx, rep, dec, path)
	if err != nil {
		return report.StatsFile{}, err
	}
	return report.StatsFile{Path: path, Table: rep.Run(t, ropts), Warnings: t.Warnings.List}, nil
}

// decodeStatsInput decodes one input of stats: an Nsight Systems export, or
// a PyTorch profiler (Kineto) trace for the summary reports, which need
// only kernels, copies, API calls and annotations (the trace reports print
// times relative to an nsys session start that a Kineto trace does not
// have).
func decodeStatsInput(ctx context.Context, rep *nsys.Report, dec nsys.Decoder, path string) (*ingest.Trace, error) {
	in, err := ingest.NewInput(path)
	if err != nil || !(kineto.Decoder{}).Sniff(in) {
		return dec.DecodeFile(ctx, path)
	}
	if !strings.HasSuffix(rep.Name, "_sum") {
		return nil, optionErrorf("%s: report %s needs an Nsight Systems export; a PyTorch profiler trace gives the *_sum reports", path, rep.Name)
	}
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: path}}
	if err := (kineto.Decoder{SkipPython: true}).Decode(ctx, in, t); err != nil {
		return nil, &ingest.InputError{Path: path, Err: err}
	}
	t.Validate()
	return t, nil
}
