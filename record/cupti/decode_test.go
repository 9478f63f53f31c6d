package cupti

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/record/cupti/cuptitest"
)

const kname = "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>(Flash_fwd_params)"

// everyKind is a stream with one record of every kind, a driver call made
// by a runtime call (same correlation) and one made directly, an unknown
// kind a newer writer might add, a longer kernel payload than version 1's,
// and an incomplete kernel.
func everyKind() *cuptitest.Stream {
	w := cuptitest.New(4242, 24, 24)
	w.Clock(ClockStart, 1_000_000, 1_700_000_000_000_000_000, 1_700_000_000_000_000_400, 55_000)
	w.Str(1, kname)
	w.Str(2, "cudaLaunchKernel_v7000")
	w.Str(3, "cuLaunchKernel")
	w.Str(4, "cuLaunchKernelEx")
	w.API(1_000_100, 1_000_900, 77, 211, 4242, 4243, 0, 2, DomainRuntime)
	w.API(1_000_200, 1_000_800, 77, 307, 4242, 4243, 0, 3, DomainDriver)
	w.API(1_001_000, 1_001_300, 78, 652, 4242, 4244, 1, 4, DomainDriver)
	w.Kernel(cuptitest.Kernel{Start: 1_002_000, End: 1_052_000, GraphNode: 9, Corr: 77, Device: 1, Context: 1, Stream: 7,
		Name: 1, Graph: 3, GX: 132, GY: 8, GZ: 1, BX: 128, BY: 1, BZ: 1, StaticSmem: 1024, DynamicSmem: 65536, Regs: 96, Kind: 10})
	// A newer writer's kernel with 8 more bytes: the extra is skipped.
	w.Record(KindKernel, func(p *cuptitest.Stream) {
		p.U64(1_060_000)
		p.U64(1_061_000)
		p.U64(0)
		for _, v := range []uint32{78, 0, 1, 13, 1, 0, 1, 1, 1, 70000, 1, 1, 0, 0} {
			p.U32(v)
		}
		p.U16(0)
		p.U8(10)
		p.U8(0)
		p.U32(0)
		p.U64(0xdeadbeef)
	})
	w.Kernel(cuptitest.Kernel{Start: 0, End: 0, Corr: 79, Name: 1}) // unfinished at a forced flush
	w.Memcpy(cuptitest.Memcpy{Start: 1_070_000, End: 1_071_500, Bytes: 1 << 20, Corr: 80, RuntimeCorr: 80, Device: 0, Context: 1, Stream: 7, CopyKind: 1, SrcKind: 3, DstKind: 2})
	w.Memcpy(cuptitest.Memcpy{Start: 1_072_000, End: 1_072_100, Bytes: 64, Corr: 81, Device: 1, Stream: 7, CopyKind: 10})
	w.Memset(cuptitest.Memset{Start: 1_080_000, End: 1_080_250, Bytes: 4096, Corr: 82, Device: 1, Context: 1, Stream: 13, Graph: 5, Value: 0xff, MemKind: 2})
	w.Sync(1_090_000, 1_095_000, 83, 1, 7, 0, 3)
	w.Record(99, func(p *cuptitest.Stream) { p.U64(1) })
	w.Dropped(12, 7)
	w.Clock(ClockEnd, 2_000_000, 1_700_000_000_001_000_000, 1_700_000_000_001_000_300, 1_055_000)
	return w
}

func decodeBytes(t *testing.T, name string, b []byte) (*ingest.Trace, Result, error) {
	t.Helper()
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: name}}
	res, err := Decode(name, bytes.NewReader(b), int64(len(b)), tr, Options{Host: "1a2b3c4d", Boot: "b00t"})
	return tr, res, err
}

func TestDecodeEveryKind(t *testing.T) {
	tr, res, err := decodeBytes(t, "cupti-4242.lpcupti", everyKind().Bytes())
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Strings.Intern
	wantOps := []ingest.GPUOp{
		{Start: 1_002_000, End: 1_052_000, Name: s(kname), Stream: 7, Correlation: 77, Pid: 4242, Device: 1, Kind: ingest.OpKernel, Shape: tr.InternShape(ingest.OpShape{Grid: [3]uint32{132, 8, 1}, Block: [3]uint16{128, 1, 1}, GraphID: 3})},
		{Start: 1_060_000, End: 1_061_000, Name: s(kname), Stream: 13, Correlation: 78, Pid: 4242, Device: 0, Kind: ingest.OpKernel, Shape: tr.InternShape(ingest.OpShape{Grid: [3]uint32{1, 1, 1}, Block: [3]uint16{65535, 1, 1}})},
		{Start: 1_070_000, End: 1_071_500, Name: s("[CUDA memcpy Host-to-Device]"), Stream: 7, Correlation: 80,
			Pid: 4242, Device: 0, Kind: ingest.OpMemcpy, Copy: ingest.CopyHtoD, Shape: tr.InternShape(ingest.OpShape{Bytes: 1 << 20})},
		{Start: 1_072_000, End: 1_072_100, Name: s("[CUDA memcpy Peer-to-Peer]"), Stream: 7, Correlation: 81,
			Pid: 4242, Device: 1, Kind: ingest.OpMemcpy, Copy: ingest.CopyPtoP, Shape: tr.InternShape(ingest.OpShape{Bytes: 64})},
		{Start: 1_080_000, End: 1_080_250, Name: s("[CUDA memset]"), Stream: 13, Correlation: 82, Pid: 4242,
			Device: 1, Kind: ingest.OpMemset, Shape: tr.InternShape(ingest.OpShape{Bytes: 4096, GraphID: 5})},
		{Start: 1_090_000, End: 1_095_000, Name: s("[CUDA Stream sync]"), Stream: 7, Correlation: 83, Pid: 4242, Device: -1, Kind: ingest.OpSync},
	}
	if diff := diff(wantOps, tr.GPUOps); diff != "" {
		t.Errorf("GPU ops (want, got):\n%s", diff)
	}
	// A failed call keeps its return code.
	wantCalls := []ingest.APICall{
		{Name: s("cudaLaunchKernel_v7000"), Start: 1_000_100, End: 1_000_900, Pid: 4242, Tid: 4243,
			Correlation: 77, Origin: ingest.OriginCUDARuntime},
		{Name: s("cuLaunchKernelEx"), Start: 1_001_000, End: 1_001_300, Pid: 4242, Tid: 4244,
			Correlation: 78, Origin: ingest.OriginCUDADriver, Return: 1},
	}
	if diff := diff(wantCalls, tr.APICalls); diff != "" {
		t.Errorf("API calls (want, got):\n%s", diff)
	}
	if len(tr.Spans) != 0 {
		t.Errorf("spans %v, want none", tr.Spans)
	}
	src := tr.Sources[0]
	wantAnchors := []ingest.ClockAnchor{
		{Kind: ingest.AnchorClockPair, Local: 1_000_000, RefLow: 1_700_000_000_000_000_000, RefHigh: 1_700_000_000_000_000_400},
		{Kind: ingest.AnchorClockPair, Local: 2_000_000, RefLow: 1_700_000_000_001_000_000, RefHigh: 1_700_000_000_001_000_300},
	}
	if diff := diff(wantAnchors, src.Anchors); diff != "" {
		t.Errorf("anchors (want, got):\n%s", diff)
	}
	if src.Clock != (ingest.ClockDomain{Name: "cupti@1a2b3c4d/b00t", Kind: ingest.ClockMonotonic}) || src.Format != SourceFormat ||
		src.Host != "1a2b3c4d" || src.Spans != 2 || src.GPUOps != 6 || !strings.Contains(src.Producer, "CUPTI API 24") {
		t.Errorf("source = %+v", src)
	}
	wantRes := Result{Pid: 4242, Clean: true, Dropped: 12, Incomplete: 1, Unknown: 1, DriverFolded: 1}
	if res != wantRes {
		t.Errorf("result = %+v, want %+v", res, wantRes)
	}
	var codes []string
	for _, w := range tr.Warnings.List {
		codes = append(codes, w.Code)
	}
	if diff := diff([]string{"cupti-dropped", "cupti-incomplete", "cupti-unknown-record"}, codes); diff != "" {
		t.Errorf("warnings (want, got):\n%s", diff)
	}
	// The launch join: each kernel to its launching call.
	calls := tr.LaunchCalls()
	if calls[0] != 0 || calls[1] != 1 || calls[2] != -1 {
		t.Errorf("LaunchCalls = %v, want the runtime call for kernel 77 and the direct driver call for kernel 78", calls)
	}
}

func TestNamesAgreeWithNsys(t *testing.T) {
	for k := range uint8(12) {
		if got, want := MemcpyName(k), nsys.MemcpyName(int64(k)); k < 11 && got != want {
			t.Errorf("MemcpyName(%d) = %q, nsys names it %q", k, got, want)
		}
	}
	for k := range uint32(6) {
		if got, want := SyncName(k), nsys.SyncName(int64(k)); got != want {
			t.Errorf("SyncName(%d) = %q, nsys names it %q", k, got, want)
		}
	}
	if MemsetName != nsys.MemsetName {
		t.Errorf("MemsetName = %q, nsys %q", MemsetName, nsys.MemsetName)
	}
}

// A file cut anywhere keeps every complete record before the cut and is
// no error; no final flush is said.
func TestDecodeTruncated(t *testing.T) {
	full := everyKind().Bytes()
	_, whole, err := decodeBytes(t, "x", full)
	if err != nil {
		t.Fatal(err)
	}
	for cut := HeaderSize; cut < len(full); cut++ {
		tr, res, err := decodeBytes(t, "x", full[:cut])
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if res.Clean {
			t.Fatalf("cut at %d: the end clock is in the cut-off part but the result says clean", cut)
		}
		if len(tr.GPUOps) > 6 || res.Truncated == (boundary(full, cut)) {
			t.Fatalf("cut at %d: %d ops, truncated %v", cut, len(tr.GPUOps), res.Truncated)
		}
	}
	if whole.Truncated {
		t.Error("the whole stream reads as truncated")
	}
}

// boundary reports whether cut falls between two records.
func boundary(b []byte, cut int) bool {
	off := HeaderSize
	for off < cut {
		off += int(binary.LittleEndian.Uint32(b[off+4:]))
	}
	return off == cut
}

func TestDecodeHostile(t *testing.T) {
	header := func() *cuptitest.Stream { return cuptitest.New(1, 24, 24) }
	raw := func(kind uint16, size uint32, payload ...byte) []byte {
		w := header()
		w.U16(kind)
		w.U16(0)
		w.U32(size)
		w.Write(payload)
		return w.Bytes()
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "too short for the 32-byte header"},
		{"short header", []byte(Magic), "too short"},
		{"bad magic", append([]byte("SQLite f"), make([]byte, 24)...), `magic "SQLite f"`},
		{"newer version", func() []byte { b := header().Bytes(); b[8] = 2; return b }(), "format version 2"},
		{"odd header size", func() []byte { b := header().Bytes(); b[10] = 33; return b }(), "header size 33"},
		{"record size 0", raw(KindKernel, 0), "record size 0"},
		{"record size not 8-aligned", raw(KindKernel, 13, make([]byte, 8)...), "record size 13"},
		{"huge record size", raw(KindString, 0xFFFFFFF8, make([]byte, 64)...), "record size 4294967288"},
		{"short kernel", raw(KindKernel, 16, make([]byte, 8)...), "kernel record of 16 bytes, want at least 96"},
		{"string longer than its record", func() []byte {
			w := header()
			w.Record(KindString, func(p *cuptitest.Stream) { p.U32(1); p.U32(0x7FFFFFFF); p.WriteString("abc") })
			return w.Bytes()
		}(), "string 1 of 2147483647 bytes"},
		{"string out of order", func() []byte { w := header(); w.Str(2, "x"); return w.Bytes() }(), "string id 2 out of order"},
		{"string id 0", func() []byte { w := header(); w.Str(0, "x"); return w.Bytes() }(), "string id 0 out of order"},
		{"kernel names an undefined string", func() []byte {
			w := header()
			w.Str(1, "a")
			w.Kernel(cuptitest.Kernel{Start: 1, End: 2, Name: 99})
			return w.Bytes()
		}(), "kernel names string 99"},
		{"API call names an undefined string", func() []byte {
			w := header()
			w.API(1, 2, 3, 4, 5, 6, 0, 0xFFFFFFFF, DomainRuntime)
			return w.Bytes()
		}(), "API call names string 4294967295"},
		{"API domain", func() []byte { w := header(); w.API(1, 2, 3, 4, 5, 6, 0, 0, 7); return w.Bytes() }(), "domain 7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := decodeBytes(t, "run.llmprof/cupti/cupti-1.lpcupti", c.data)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "run.llmprof/cupti/cupti-1.lpcupti: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q: want the file's name and %q", err, c.want)
			}
		})
	}
	// A record bigger than the rest of the file, within MaxRecord, is a
	// cut-off file, not an error.
	tr, res, err := decodeBytes(t, "x", raw(KindString, 1<<19, make([]byte, 100)...))
	if err != nil || !res.Truncated || len(tr.Warnings.List) == 0 {
		t.Errorf("record past the end: err %v, result %+v", err, res)
	}
}

// A header declaring the largest record must not allocate it.
func TestDecodeBoundedAllocation(t *testing.T) {
	w := cuptitest.New(1, 24, 24)
	w.U16(KindString)
	w.U16(0)
	w.U32(MaxRecord)
	w.Write(make([]byte, 64))
	data := w.Bytes()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 20 {
		if _, _, err := decodeBytes(t, "x", data); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 20; per > 256<<10 {
		t.Errorf("%d bytes allocated per decode of a %d-byte file declaring a %d-byte record", per, len(data), MaxRecord)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(everyKind().Bytes())
	f.Add(cuptitest.New(1, 24, 24).Bytes())
	b := everyKind().Bytes()
	f.Add(b[:len(b)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		tr := ingest.New()
		tr.Sources = []ingest.Source{{Path: "f"}}
		_, err := Decode("fz.lpcupti", bytes.NewReader(data), int64(len(data)), tr, Options{})
		if err != nil && !strings.HasPrefix(err.Error(), "fz.lpcupti: ") {
			t.Fatalf("error does not name the file: %v", err)
		}
		// Every op and span comes from at least 48 bytes of the file.
		if n := len(tr.GPUOps) + len(tr.Spans); n*48 > len(data) {
			t.Fatalf("%d records from %d bytes", n, len(data))
		}
	})
}

// diff is "" when want and got are deeply equal, else both, one element a
// line.
func diff[T any](want, got []T) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	var b strings.Builder
	for i := range max(len(want), len(got)) {
		var w, g any = "(none)", "(none)"
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		mark := " "
		if !reflect.DeepEqual(w, g) {
			mark = "!"
		}
		fmt.Fprintf(&b, "%s %d want %+v\n%s %d got  %+v\n", mark, i, w, mark, i, g)
	}
	return b.String()
}

// BenchmarkDecode decodes a file of 100,000 kernels, each launched by a
// runtime call whose driver call is folded into it.
func BenchmarkDecode(b *testing.B) {
	w := cuptitest.New(1, 24, 24)
	w.Clock(ClockStart, 1, 1, 2, 1)
	w.Str(1, kname)
	w.Str(2, "cudaLaunchKernel")
	w.Str(3, "cuLaunchKernel")
	for i := range uint32(100_000) {
		t := uint64(i)*10_000 + 1000
		w.API(t, t+3000, i+1, 211, 1, 1, 0, 2, DomainRuntime)
		w.API(t+500, t+2500, i+1, 307, 1, 1, 0, 3, DomainDriver)
		w.Kernel(cuptitest.Kernel{Start: t + 4000, End: t + 9000, Corr: i + 1, Name: 1, GX: 1, GY: 1, GZ: 1, BX: 128, BY: 1, BZ: 1})
	}
	w.Clock(ClockEnd, 2_000_000_000, 3, 4, 2)
	data := w.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		tr := ingest.New()
		tr.Sources = []ingest.Source{{Path: "b"}}
		if _, err := Decode("b", bytes.NewReader(data), int64(len(data)), tr, Options{}); err != nil {
			b.Fatal(err)
		}
		if len(tr.GPUOps) != 100_000 || len(tr.Spans) != 100_000 {
			b.Fatalf("%d ops, %d spans", len(tr.GPUOps), len(tr.Spans))
		}
	}
}

func TestDecoderStandalone(t *testing.T) {
	path := t.TempDir() + "/cupti-4242.lpcupti"
	if err := os.WriteFile(path, everyKind().Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.GPUOps) != 6 || len(tr.APICalls) != 2 || tr.Sources[0].Format != SourceFormat || tr.Sources[0].Clock.Name != "cupti@"+tr.Sources[0].Host+"/" || tr.Sources[0].Host == "" {
		t.Fatalf("%d ops, %d API calls, source %+v", len(tr.GPUOps), len(tr.APICalls), tr.Sources[0])
	}
	if (Decoder{}).Sniff(&ingest.Input{Head: []byte("SQLite format 3\x00")}) {
		t.Error("sniffed SQLite as a CUPTI file")
	}
}
