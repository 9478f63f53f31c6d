package kineto_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/synth"
)

// TestWriteRoundTrip writes a synthetic run's GPU side as Kineto traces in
// every time layout Kineto has used, CUDA and ROCm, decodes them and
// checks every GPU op and CPU span comes back to the nanosecond. A run of
// 400 ms of arrivals (33,600 ops on both engines; seed 3's second of
// arrivals had 90,000): what the round trip proves is per op, and the run
// is checked to hold every kind the writer has a form for.
func TestWriteRoundTrip(t *testing.T) {
	cfg := synth.DefaultConfig(5, 400*time.Millisecond)
	cfg.GPUClock = synth.ClockError{OffsetNs: 1_734_000_000, DriftPPM: 35}
	cfg.CUDAGraphs = true
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gpu := run.GPUTrace()
	gpu.Validate()
	kinds := map[string]int{}
	for i := range gpu.GPUOps {
		o := &gpu.GPUOps[i]
		kinds[o.Kind.String()]++
		if o.Kind == ingest.OpMemcpy {
			kinds[o.Copy.String()]++
		}
		if gpu.ShapeOf(o).GraphID != 0 {
			kinds["graph"]++
		}
	}
	for _, k := range []string{ingest.OpKernel.String(), ingest.OpMemcpy.String(), ingest.OpMemset.String(), ingest.CopyHtoD.String(), ingest.CopyDtoH.String(), "graph"} {
		if kinds[k] == 0 {
			t.Fatalf("the run has no %s ops (%v): the round trip would not cover them", k, kinds)
		}
	}
	for _, tc := range []struct {
		name string
		opts kineto.WriteOptions
	}{
		{"base before events", kineto.WriteOptions{Times: kineto.BaseBefore}},
		{"base after events", kineto.WriteOptions{Times: kineto.BaseAfter}},
		{"absolute", kineto.WriteOptions{Times: kineto.Absolute}},
		{"rocm", kineto.WriteOptions{Times: kineto.BaseBefore, ROCm: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, eng := range run.Engines {
				opts := tc.opts
				opts.Pid, opts.WorldSize, opts.Rank = eng.Pid, 2, 1
				var buf bytes.Buffer
				if err := kineto.Write(&buf, gpu, opts); err != nil {
					t.Fatal(err)
				}
				if !(kineto.Decoder{}).Sniff(&ingest.Input{Head: buf.Bytes()[:min(buf.Len(), ingest.HeadSize)]}) {
					t.Fatal("Sniff does not take what Write writes")
				}
				got, err := kineto.Decoder{}.DecodeReader(context.Background(), &buf, "synth.pt.trace.json")
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Warnings.List) > 0 {
					t.Errorf("warnings: %v", got.Warnings.List)
				}
				got.Validate()
				compareOps(t, gpu, got, eng.Pid)
				compareSpans(t, gpu, got, eng.Pid, tc.opts.ROCm)
				src := got.Sources[0]
				if src.Meta[kineto.MetaRank] != "1" || src.Meta[kineto.MetaWorldSize] != "2" || src.Clock.Kind != ingest.ClockRealtime {
					t.Errorf("source %+v", src)
				}
				if want := map[bool]string{true: "rocm", false: "cuda"}[tc.opts.ROCm]; src.Meta[kineto.MetaGPU] != want {
					t.Errorf("gpu %q, want %q", src.Meta[kineto.MetaGPU], want)
				}
			}
		})
	}
}

func compareOps(t *testing.T, want, got *ingest.Trace, pid uint32) {
	t.Helper()
	var w []ingest.GPUOp
	for _, o := range want.GPUOps {
		if o.Pid == pid {
			w = append(w, o)
		}
	}
	if len(got.GPUOps) != len(w) || len(w) == 0 {
		t.Fatalf("pid %d: %d GPU ops, wrote %d", pid, len(got.GPUOps), len(w))
	}
	for i := range w {
		a, b := w[i], got.GPUOps[i]
		name, gname := want.Str(a.Name), got.Str(b.Name)
		if a.Kind == ingest.OpMemcpy {
			if !strings.HasPrefix(gname, "Memcpy "+a.Copy.String()) {
				t.Fatalf("op %d: memcpy %v named %q", i, a.Copy, gname)
			}
			name = gname
		}
		if a.Kind == ingest.OpMemset {
			// Kineto names every fill "Memset (Device)" (as CUPTI reports it).
			if gname != "Memset (Device)" {
				t.Fatalf("op %d: memset named %q", i, gname)
			}
			name = gname
		}
		as, bs := want.ShapeOf(&a), got.ShapeOf(&b)
		a.Name, b.Name, a.Source, b.Source, a.Shape, b.Shape = 0, 0, 0, 0, 0, 0
		if a != b || as != bs || name != gname {
			t.Fatalf("op %d:\n got  %+v %+v %q\n want %+v %+v %q", i, b, bs, gname, a, as, name)
		}
	}
	calls := got.LaunchCalls()
	for i, c := range calls {
		if c < 0 {
			t.Fatalf("op %d (%s) has no launch", i, got.Str(got.GPUOps[i].Name))
		}
	}
}

func compareSpans(t *testing.T, want, got *ingest.Trace, pid uint32, rocm bool) {
	t.Helper()
	var w []ingest.Span
	for _, s := range want.Spans {
		if s.Pid == pid {
			w = append(w, s)
		}
	}
	if len(got.Spans) != len(w) {
		t.Fatalf("pid %d: %d spans, wrote %d", pid, len(got.Spans), len(w))
	}
	for i := range w {
		a, b := &w[i], &got.Spans[i]
		if got.Str(b.Name) != want.Str(a.Name) || a.Start != b.Start || a.End != b.End || a.Origin != b.Origin ||
			a.Pid != b.Pid || a.Tid != b.Tid {
			t.Fatalf("span %d:\n got  %q %+v\n want %q %+v", i, got.Str(b.Name), *b, want.Str(a.Name), *a)
		}
	}
	var wc []ingest.APICall
	for _, c := range want.APICalls {
		if c.Pid == pid {
			wc = append(wc, c)
		}
	}
	if len(got.APICalls) != len(wc) || len(wc) == 0 {
		t.Fatalf("pid %d: %d API calls, wrote %d", pid, len(got.APICalls), len(wc))
	}
	for i := range wc {
		a, b := &wc[i], &got.APICalls[i]
		name := want.Str(a.Name)
		if rocm {
			name = "hip" + strings.TrimPrefix(name, "cuda")
		}
		if got.Str(b.Name) != name || a.Start != b.Start || a.End != b.End || a.Origin != b.Origin ||
			a.Pid != b.Pid || a.Tid != b.Tid || a.Correlation != b.Correlation {
			t.Fatalf("call %d:\n got  %q %+v\n want %q %+v", i, got.Str(b.Name), *b, name, *a)
		}
	}
}

// TestRanksWithEqualPids: two ranks on two hosts whose processes have the
// same pid and the same correlation ids (each file numbers them from 1)
// stay apart: every kernel joins its own rank's launch, and each rank is
// its own clock domain.
func TestRanksWithEqualPids(t *testing.T) {
	rank := func(r int, kernel string, ts string) *ingest.Trace {
		doc := `{"schemaVersion": 1, "distributedInfo": {"rank": ` + string(rune('0'+r)) + `, "world_size": 2},
  "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ` + ts + `, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "` + kernel + `", "pid": 0, "tid": 7, "ts": ` + ts + `, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 7}}
  ], "baseTimeNanoseconds": 1735632360000000000}`
		tr, err := kineto.Decoder{}.DecodeReader(context.Background(), strings.NewReader(doc), "rank-"+string(rune('0'+r))+".pt.trace.json")
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	m := ingest.Merge(rank(0, "gemm_rank0", "100.000"), rank(1, "gemm_rank1", "900.000"))
	m.Validate()
	calls := m.LaunchCalls()
	for i, c := range calls {
		o := &m.GPUOps[i]
		if c < 0 || m.APICalls[c].Source != o.Source {
			t.Errorf("%s joined to call %d of another rank", m.Str(o.Name), c)
		}
	}
	if m.Sources[0].Clock.Name == m.Sources[1].Clock.Name {
		t.Errorf("both ranks in clock domain %q", m.Sources[0].Clock.Name)
	}
}
