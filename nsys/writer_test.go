package nsys

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// handTrace builds a trace of everything an export can hold, shaped as the
// decoder produces it (attribute order, op names derived from kinds).
func handTrace(session int64) *ingest.Trace {
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: "hand"}}
	s := t.Strings.Intern
	key := func(k string) ingest.StrID { return s(k) }
	at := func(ns int64) int64 { return session + ns }
	api := func(name string, origin ingest.SpanOrigin, start, end int64, tid, corr uint32, ret int32) {
		t.APICalls = append(t.APICalls, ingest.APICall{Name: s(name), Start: at(start), End: at(end), Pid: 4242, Tid: tid,
			Correlation: corr, Origin: origin, Return: ret})
	}
	nvtx := func(name string, start, end int64, tid uint32, attrs ...ingest.Attr) {
		t.Spans = append(t.Spans, ingest.Span{Name: s(name), Start: at(start), End: at(end), Pid: 4242, Tid: tid,
			Origin: ingest.OriginNVTX, Resource: -1, Scope: -1, Attrs: t.AddAttrs(attrs...)})
	}
	typ := func(v string) ingest.Attr { return ingest.NewAttr(key("nvtx.type"), ingest.StringValue(s(v))) }
	nvtx("step span_id=00f067aa0ba902b7", 100, 9000, 4243, typ(NVTXPushPop),
		ingest.NewAttr(key("nvtx.domain"), ingest.StringValue(s("vllm"))),
		ingest.NewAttr(key("nvtx.category"), ingest.IntValue(3)),
		ingest.NewAttr(key("nvtx.payload"), ingest.IntValue(17)))
	api("cudaLaunchKernel", ingest.OriginCUDARuntime, 200, 260, 4243, 11, 0)
	nvtx("mark", 300, 300, 4243, typ(NVTXMark))
	api("cuLaunchKernel", ingest.OriginCUDADriver, 400, 450, 4243, 12, 700)
	nvtx("async request", 500, 7000, 4243, typ(NVTXStartEnd),
		ingest.NewAttr(key("nvtx.payload"), ingest.DoubleValue(0.25)),
		ingest.NewAttr(key("nvtx.end_tid"), ingest.IntValue(4250)))
	api("cudaMemcpyAsync", ingest.OriginCUDARuntime, 600, 650, 4243, 13, 0)
	api("cudaMemsetAsync", ingest.OriginCUDARuntime, 700, 710, 4243, 14, 0)
	api("cudaGraphLaunch", ingest.OriginCUDARuntime, 800, 830, 4243, 15, 0)
	api("cudaStreamSynchronize", ingest.OriginCUDARuntime, 900, 8500, 4243, 16, 0)
	// Never closed: ends at the last NVTX timestamp (9000).
	nvtx("unclosed", 950, 9000, 4244, typ(NVTXPushPop), ingest.NewAttr(key("nvtx.unclosed"), ingest.BoolValue(true)))

	op := func(o ingest.GPUOp) {
		o.Pid = 4242
		o.Start, o.End = at(o.Start), at(o.End)
		t.GPUOps = append(t.GPUOps, o)
	}
	op(ingest.GPUOp{Kind: ingest.OpKernel, Start: 1000, End: 2000, Name: s("void flash_fwd_kernel<Traits>(Params)"),
		ShortName: s("flash_fwd_kernel"), Stream: 7, Correlation: 11, Device: 0, Shape: t.InternShape(ingest.OpShape{Grid: [3]uint32{132, 2, 1}, Block: [3]uint16{128, 1, 1}})})
	op(ingest.GPUOp{Kind: ingest.OpKernel, Start: 2100, End: 2600, Name: s("nvjet_tst_192x192"), ShortName: s("nvjet_tst_192x192"),
		Stream: 7, Correlation: 12, Device: 1, Shape: t.InternShape(ingest.OpShape{Grid: [3]uint32{1, 1, 1}, Block: [3]uint16{384, 1, 1}, GraphID: 5})})
	op(ingest.GPUOp{Kind: ingest.OpMemcpy, Start: 2700, End: 2900, Name: s(MemcpyName(1)), Copy: ingest.CopyHtoD, Stream: 7, Correlation: 13, Device: 0, Shape: t.InternShape(ingest.OpShape{Bytes: 1 << 20})})
	op(ingest.GPUOp{Kind: ingest.OpMemcpy, Start: 2950, End: 2990, Name: s(MemcpyName(12)), Copy: ingest.CopyDtoH, Stream: 7, Device: 0, Shape: t.InternShape(ingest.OpShape{Bytes: 4096})})
	op(ingest.GPUOp{Kind: ingest.OpMemset, Start: 3000, End: 3100, Name: s(MemsetName), Stream: 8, Correlation: 14, Device: 0, Shape: t.InternShape(ingest.OpShape{Bytes: 64})})
	op(ingest.GPUOp{Kind: ingest.OpGraph, Start: 3200, End: 8000, Name: s(GraphName(9)), Stream: 7, Correlation: 15, Device: 0, Shape: t.InternShape(ingest.OpShape{GraphID: 9})})
	op(ingest.GPUOp{Kind: ingest.OpSync, Start: 8100, End: 8400, Name: s(SyncName(3)), Stream: 7, Correlation: 16, Device: 0})

	metric := s("SMs Active [Throughput %]")
	for i, v := range []float64{12.5, 80, 99.75} {
		t.Samples = append(t.Samples, ingest.Sample{Time: at(int64(1000 + 1000*i)), Value: v, Metric: metric, Device: 0, Instance: -1})
	}
	t.MemoryEvents = []ingest.MemoryEvent{
		{Time: at(150), Address: 0x7f0000000000, Bytes: 1 << 30, Pid: 4242, Correlation: 0, Device: 0, Op: ingest.MemAlloc, Kind: ingest.MemDevice},
		{Time: at(8800), Address: 0x7f0000000000, Bytes: 1 << 30, Pid: 4242, Correlation: 0, Device: 0, Op: ingest.MemFree, Kind: ingest.MemDevice},
	}
	t.Devices = []ingest.Device{{ID: 0, Name: "NVIDIA H200", UUID: "1825e7cc", SMs: 132, MemoryBytes: 150121545728},
		{ID: 1, Name: "NVIDIA H200", UUID: "2825e7cc", SMs: 132, MemoryBytes: 150121545728}}
	t.Processes = []ingest.Process{{Pid: 4242, Name: "python3"}}
	t.Threads = []ingest.Thread{{Pid: 4242, Tid: 4243, Name: "engine"}, {Pid: 4242, Tid: 4244, Name: "detokenizer"}}
	t.Validate()
	return t
}

func dump(t *testing.T, tr *ingest.Trace) string {
	t.Helper()
	var b bytes.Buffer
	if err := tr.Dump(&b, ingest.DumpOptions{}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteSQLiteRoundTrip(t *testing.T) {
	const session = 1_741_793_819_042_497_997
	for _, tc := range []struct {
		name string
		opts WriteOptions
	}{
		{"session-relative", WriteOptions{SessionStart: session}},
		{"normalized", WriteOptions{SessionStart: session, Normalized: true}},
		{"start from the first record", WriteOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := handTrace(session)
			path := filepath.Join(t.TempDir(), "out.sqlite")
			if err := WriteSQLite(path, in, tc.opts); err != nil {
				t.Fatal(err)
			}
			out, err := Decoder{}.DecodeFile(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := dump(t, out), dump(t, in); got != want {
				t.Errorf("round trip differs:\n--- written\n%s\n--- decoded\n%s", want, got)
			}
			src := out.Sources[0]
			wantStart := tc.opts.SessionStart
			if wantStart == 0 {
				wantStart = in.Spans[0].Start
			}
			if len(src.Anchors) != 1 || src.Anchors[0].RefLow != wantStart {
				t.Errorf("anchors %+v, want the session start %d", src.Anchors, wantStart)
			}
			if src.Meta[MetaTimeNorm] != map[bool]string{true: "true", false: "false"}[tc.opts.Normalized] {
				t.Errorf("meta %v", src.Meta)
			}
			for _, w := range out.Warnings.List {
				if w.Code != "nvtx-unclosed" {
					t.Errorf("unexpected warning: %s", w)
				}
			}
		})
	}
}

// The written file must read the same in the sqlite3 shell: the schema
// nsys stats' SQL expects, the session start, the kernel names.
func TestWriteSQLiteSchemaForSQL(t *testing.T) {
	in := handTrace(1_700_000_000_000_000_000)
	path := filepath.Join(t.TempDir(), "out.sqlite")
	if err := WriteSQLite(path, in, WriteOptions{SessionStart: 1_700_000_000_000_000_000}); err != nil {
		t.Fatal(err)
	}
	rows := sqlite3Rows(t, path, `SELECT s.value, k.start, k."end" - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName ORDER BY k.start`)
	got := []string{}
	for _, r := range rows {
		got = append(got, strings.Join(r, " "))
	}
	if want := "flash_fwd_kernel 1000 1000|nvjet_tst_192x192 2100 500"; strings.Join(got, "|") != want {
		t.Errorf("kernels in SQL: %q, want %q", strings.Join(got, "|"), want)
	}
	if r := sqlite3Rows(t, path, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME"); r[0][0] != "1700000000000000000" {
		t.Errorf("utcEpochNs = %s", r[0][0])
	}
	if r := sqlite3Rows(t, path, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"); r[0][0] != WriterSchemaVersion {
		t.Errorf("schema version = %s", r[0][0])
	}
}

// The trace written in pieces of one record of each table, the head
// holding the samples and memory events, is the same export byte for byte
// as written whole: the NVTX domain numbered once across pieces (a second
// range of the "vllm" domain in the last piece), every op kind's table
// made from the counts of all pieces, the grid IDs running on.
func TestWriteSQLitePartsHandTrace(t *testing.T) {
	const session = 1_741_793_819_042_497_997
	in := handTrace(session)
	s := in.Strings.Intern
	in.Spans = append(in.Spans, ingest.Span{Name: s("late step"), Start: session + 9500, End: session + 9600, Pid: 4242, Tid: 4243,
		Origin: ingest.OriginNVTX, Resource: -1, Scope: -1, Attrs: in.AddAttrs(
			ingest.NewAttr(s("nvtx.type"), ingest.StringValue(s(NVTXPushPop))),
			ingest.NewAttr(s("nvtx.domain"), ingest.StringValue(s("vllm"))))})
	dir := t.TempDir()
	whole, pieces := filepath.Join(dir, "whole.sqlite"), filepath.Join(dir, "pieces.sqlite")
	if err := WriteSQLite(whole, in, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	n := max(len(in.Spans), len(in.APICalls), len(in.GPUOps))
	one := func(k, length int) (int, int) { return min(k, length), min(k+1, length) }
	parts := func(yield func(*ingest.Trace) error) error {
		for k := range n {
			p := *in
			a, b := one(k, len(in.Spans))
			p.Spans = in.Spans[a:b]
			a, b = one(k, len(in.APICalls))
			p.APICalls = in.APICalls[a:b]
			a, b = one(k, len(in.GPUOps))
			p.GPUOps = in.GPUOps[a:b]
			p.Samples, p.MemoryEvents = nil, nil
			if err := yield(&p); err != nil {
				return err
			}
		}
		return nil
	}
	if err := WriteSQLiteParts(pieces, in, parts, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, b := readBoth(t, whole, pieces); !bytes.Equal(a, b) {
		t.Fatalf("the hand trace written in %d pieces (%d bytes) differs from it written whole (%d bytes)", n, len(b), len(a))
	}
}
