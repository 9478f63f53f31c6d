package record

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// captureBuilder writes a capture directory table by table, as Record
// would, for decoder tests.
type captureBuilder struct {
	t   testing.TB
	dir string
	m   Manifest
}

func newCaptureBuilder(t testing.TB, status string) *captureBuilder {
	dir := filepath.Join(t.TempDir(), "cap.llmprof")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &captureBuilder{t: t, dir: dir, m: Manifest{
		Format: FormatName, SchemaVersion: SchemaVersion, CaptureID: "c0ffee", Status: status,
		Tool:    ToolInfo{Name: "llmprof", Version: "test"},
		Host:    HostInfo{Hostname: "gpu-host", BootID: "0123456789abcdef"},
		Command: CommandInfo{Argv: []string{"/usr/bin/vllm", "serve", "--api-key", "secret"}, Pid: 4242, ExitCode: ptr(0)},
		NVML:    NVMLInfo{Available: true, DriverVersion: "550.54.15"},
		GPUs:    []GPUInfo{{Index: 0, UUID: "GPU-0", Name: "NVIDIA H200", MemoryTotalBytes: 141 << 30}},
	}}
}

func writeRows[R any](b *captureBuilder, ts *tableSchema, rows ...R) {
	b.t.Helper()
	tw, err := newTableWriter[R](b.dir, ts, writerConfig{captureID: b.m.CaptureID, batchRows: 2, flushInterval: time.Hour})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, r := range rows {
		if err := tw.Send(context.Background(), r); err != nil {
			b.t.Fatal(err)
		}
	}
	b.m.Files = append(b.m.Files, tw.Close())
}

func (b *captureBuilder) finish() string {
	b.t.Helper()
	if err := writeManifest(b.dir, &b.m); err != nil {
		b.t.Fatal(err)
	}
	return b.dir
}

func decodeCapture(t testing.TB, dir string, dec *CaptureDecoder) *ingest.Trace {
	t.Helper()
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: dir, Format: "capture"}}
	in := &ingest.Input{Path: dir, Dir: true}
	if !dec.Sniff(in) {
		t.Fatalf("%s not recognized as a capture", dir)
	}
	if err := dec.Decode(context.Background(), in, tr); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return tr
}

func hasWarning(tr *ingest.Trace, code string) bool {
	for _, w := range tr.Warnings.List {
		if w.Code == code {
			return true
		}
	}
	return false
}

// samplesByMetric indexes samples by metric name.
func samplesByMetric(tr *ingest.Trace) map[string][]ingest.Sample {
	out := map[string][]ingest.Sample{}
	for _, s := range tr.Samples {
		n := tr.Str(s.Metric)
		out[n] = append(out[n], s)
	}
	return out
}

func TestCaptureDecoder(t *testing.T) {
	b := newCaptureBuilder(t, StatusComplete)
	pb, _ := testTraces(3).MarshalProto()
	js, _ := testTraces(2).MarshalJSON()
	writeRows(b, otlpSchema,
		OTLPPayload{Signal: SignalTraces, Transport: "grpc", Encoding: EncodingProto, Payload: pb, Items: 3},
		OTLPPayload{Signal: SignalTraces, Transport: "http", Encoding: EncodingJSON, Payload: js, Items: 2},
		OTLPPayload{Signal: SignalMetrics, Transport: "grpc", Encoding: EncodingProto, Payload: []byte{}},
	)
	writeRows(b, clockSchema,
		ClockPair{Label: "start", RealLoNs: 1_000_000_000_000, MonoNs: 5_000, RealHiNs: 1_000_000_000_400},
		ClockPair{Label: "end", RealLoNs: 1_000_010_000_000, MonoNs: 10_005_000, RealHiNs: 1_000_010_000_200},
	)
	writeRows(b, deviceSchema,
		DeviceSample{MonoNs: 6_000, GPU: 0, GPUUUID: "GPU-0", UtilGPUPct: ptr(uint32(42)), PowerAvgMW: ptr(uint32(350_000)),
			NVLinkTXKiB: ptr(uint64(2)), PollLatencyNs: 1500},
		DeviceSample{MonoNs: 7_000, GPU: 0, GPUUUID: "GPU-0", MIGUUID: ptr("MIG-1"), GI: ptr(int32(3)), MemUsedBytes: ptr(uint64(4 << 30))},
	)
	writeRows(b, bufferedSchema,
		BufferedSample{MonoNs: 8_000, GPU: 0, SamplingType: 0, NVMLTimestampUs: 1_000_000_001, Value: 300_000},
		BufferedSample{MonoNs: 8_000, GPU: 0, SamplingType: 42, NVMLTimestampUs: 1_000_000_002, Value: 7},
	)
	writeRows(b, processSchema,
		ProcessSample{MonoNs: 9_000, GPU: 0, Pid: 4242, Source: "utilization", NVMLTimestampUs: ptr(uint64(1_000_000_003)), SMUtilPct: ptr(uint32(55)), MemUtilPct: ptr(uint32(9))},
		ProcessSample{MonoNs: 9_500, GPU: 0, Pid: 4242, Source: "running", UsedMemoryBytes: ptr(uint64(20 << 30)), GI: ptr(uint32(1))},
	)
	writeRows(b, gpmSchema, GPMSample{T0MonoNs: 1_000, T1MonoNs: 9_900, GPU: 0, MetricID: 2, Value: 81.5},
		GPMSample{T0MonoNs: 1_000, T1MonoNs: 9_900, GPU: 0, MetricID: 20, Value: 2})
	writeRows(b, eventSchema, Event{Kind: "child_exit", Code: ptr(int64(0))})
	tr := decodeCapture(t, b.finish(), &CaptureDecoder{})

	if len(tr.Sources) != 2 {
		t.Fatalf("%d sources, want the capture and its monotonic source", len(tr.Sources))
	}
	cap, mono := tr.Sources[0], tr.Sources[1]
	if cap.Format != SourceFormat || cap.Spans != 5 || cap.Clock.Kind != ingest.ClockRealtime || cap.Meta["command"] != "vllm" {
		t.Errorf("capture source %+v", cap)
	}
	if strings.Contains(strings.Join(values(cap.Meta), " "), "secret") {
		t.Error("the command's arguments leaked into the source's metadata")
	}
	if mono.Format != SourceFormatMonotonic || mono.Clock.Kind != ingest.ClockMonotonic || mono.Clock.Name != "monotonic@"+ingest.HostID("gpu-host")+"/01234567" || mono.Host != cap.Host || cap.Host != ingest.HostID("gpu-host") {
		t.Errorf("monotonic source %+v", mono)
	}
	wantAnchors := []ingest.ClockAnchor{
		{Kind: ingest.AnchorClockPair, Local: 5_000, RefLow: 1_000_000_000_000, RefHigh: 1_000_000_000_400},
		{Kind: ingest.AnchorClockPair, Local: 10_005_000, RefLow: 1_000_010_000_000, RefHigh: 1_000_010_000_200},
	}
	if len(mono.Anchors) != 2 || mono.Anchors[0] != wantAnchors[0] || mono.Anchors[1] != wantAnchors[1] {
		t.Errorf("anchors %+v", mono.Anchors)
	}
	if len(tr.Spans) != 5 || tr.Str(tr.Spans[0].Name) != "span-0" {
		t.Fatalf("%d spans", len(tr.Spans))
	}
	s := samplesByMetric(tr)
	check := func(metric string, src ingest.SourceID, at int64, v float64, inst int16, pid uint32) {
		t.Helper()
		got := s[metric]
		if len(got) != 1 {
			t.Errorf("%s: %d samples, want 1", metric, len(got))
			return
		}
		g := got[0]
		if g.Source != src || g.Time != at || g.Value != v || g.Instance != inst || g.Pid != pid || g.Device != 0 {
			t.Errorf("%s = %+v, want source %d time %d value %g instance %d pid %d", metric, g, src, at, v, inst, pid)
		}
	}
	check("nvml.gpu_util_pct", 1, 6_000, 42, -1, 0)
	check("nvml.power_w", 1, 6_000, 350, -1, 0)
	check("nvml.nvlink_tx_bytes", 1, 6_000, 2048, -1, 0)
	check("nvml.mem_used_bytes", 1, 7_000, 4<<30, 3, 0)
	check("nvml.buffered.power_w", 0, 1_000_000_001_000, 300, -1, 0)
	check("nvml.buffered.type42", 0, 1_000_000_002_000, 7, -1, 0)
	check("nvml.process.sm_util_pct", 0, 1_000_000_003_000, 55, -1, 4242)
	check("nvml.process.used_memory_bytes", 1, 9_500, 20<<30, 1, 4242)
	check("gpm.sm_util_pct", 1, 9_900, 81.5, -1, 0)
	check("gpm.pcie_tx_bytes_per_s", 1, 9_900, 2<<20, -1, 0)
	if s["nvml.temp_c"] != nil {
		t.Error("a NULL column became a sample")
	}
	if len(tr.Devices) != 1 || tr.Devices[0].Name != "NVIDIA H200" || len(tr.Processes) != 1 || tr.Processes[0].Pid != 4242 {
		t.Errorf("devices %+v processes %+v", tr.Devices, tr.Processes)
	}
	if len(tr.Warnings.List) != 0 {
		t.Errorf("warnings on a clean capture: %v", tr.Warnings.List)
	}
	if cap.Samples+mono.Samples != len(tr.Samples) {
		t.Errorf("source sample counts %d+%d != %d", cap.Samples, mono.Samples, len(tr.Samples))
	}
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestCaptureDecoderProblems(t *testing.T) {
	t.Run("interrupted and truncated", func(t *testing.T) {
		b := newCaptureBuilder(t, StatusRecording)
		pb, _ := testTraces(2).MarshalProto()
		writeRows(b, otlpSchema, OTLPPayload{Signal: SignalTraces, Payload: pb}, OTLPPayload{Signal: SignalTraces, Payload: pb},
			OTLPPayload{Signal: SignalTraces, Payload: pb})
		dir := b.finish()
		path := filepath.Join(dir, TableFile(TableOTLP))
		full, _ := os.ReadFile(path)
		os.WriteFile(path, full[:len(full)-40], 0o644) // the last batch (1 row) is cut
		tr := decodeCapture(t, dir, &CaptureDecoder{})
		if len(tr.Spans) != 4 {
			t.Errorf("%d spans from the 2 complete payloads, want 4", len(tr.Spans))
		}
		if !hasWarning(tr, "capture-interrupted") || !hasWarning(tr, "capture-truncated-table") {
			t.Errorf("warnings %v", tr.Warnings.List)
		}
	})
	t.Run("still being recorded", func(t *testing.T) {
		b := newCaptureBuilder(t, StatusRecording)
		b.m.Host.BootID = hostInfo().BootID
		b.m.Recorder.Pid = os.Getpid() // alive: this test
		tr := decodeCapture(t, b.finish(), &CaptureDecoder{})
		if !hasWarning(tr, "capture-in-progress") || hasWarning(tr, "capture-interrupted") {
			t.Errorf("warnings %v", tr.Warnings.List)
		}
	})
	t.Run("bad payload, bad table, changed file", func(t *testing.T) {
		b := newCaptureBuilder(t, StatusChildFailed)
		b.m.StatusDetail = "child exited with status 3"
		pb, _ := testTraces(2).MarshalProto()
		writeRows(b, otlpSchema, OTLPPayload{Signal: SignalTraces, Payload: []byte{0x0a, 0x7f}}, OTLPPayload{Signal: SignalTraces, Payload: pb})
		writeRows(b, eventSchema, Event{Kind: "x"})
		dir := b.finish()
		os.WriteFile(filepath.Join(dir, TableFile(TableGPUDevice)), []byte("garbage, not arrow"), 0o644)
		f, _ := os.OpenFile(filepath.Join(dir, TableFile(TableEvents)), os.O_APPEND|os.O_WRONLY, 0)
		f.Write([]byte{0})
		f.Close()
		tr := decodeCapture(t, dir, &CaptureDecoder{})
		if len(tr.Spans) != 2 {
			t.Errorf("%d spans, want the 2 of the good payload", len(tr.Spans))
		}
		for _, code := range []string{"capture-child-failed", "bad-otlp-payload", "capture-bad-table", "capture-checksum"} {
			if !hasWarning(tr, code) {
				t.Errorf("no %s warning in %v", code, tr.Warnings.List)
			}
		}
	})
	t.Run("unreadable manifest", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"format":"llmprof-capture","schema_version":99}`), 0o644)
		tr := ingest.New()
		tr.Sources = []ingest.Source{{Path: dir}}
		err := (&CaptureDecoder{}).Decode(context.Background(), &ingest.Input{Path: dir, Dir: true}, tr)
		if err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestCaptureSniff(t *testing.T) {
	dec := &CaptureDecoder{}
	mk := func(manifest string) string {
		dir := t.TempDir()
		if manifest != "" {
			os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifest), 0o644)
		}
		return dir
	}
	for _, tc := range []struct {
		name string
		in   *ingest.Input
		want bool
	}{
		{"capture", &ingest.Input{Path: mk(`{"format":"llmprof-capture","schema_version":1}`), Dir: true}, true},
		{"no manifest", &ingest.Input{Path: mk(""), Dir: true}, false},
		{"someone else's manifest", &ingest.Input{Path: mk(`{"name":"my-app","version":"1.0"}`), Dir: true}, false},
		{"broken manifest", &ingest.Input{Path: mk(`{"format":`), Dir: true}, false},
		{"a file", &ingest.Input{Path: "x.json", Head: []byte(`{"format":"llmprof-capture"}`)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dec.Sniff(tc.in); got != tc.want {
				t.Fatalf("Sniff = %v", got)
			}
		})
	}
}

// fakeNsys stands in for the nsys decoder: it recognizes the SQLite
// header and adds one kernel.
type fakeNsys struct{}

func (fakeNsys) Name() string { return "nsys" }
func (fakeNsys) Sniff(in *ingest.Input) bool {
	return bytes.HasPrefix(in.Head, []byte("SQLite format 3\x00"))
}
func (fakeNsys) Decode(_ context.Context, _ *ingest.Input, t *ingest.Trace) error {
	t.GPUOps = append(t.GPUOps, ingest.GPUOp{Start: 1, End: 2, Name: t.Strings.Intern("ampere_sgemm"), Device: 0})
	t.Sources[0].GPUOps = 1
	return nil
}

func TestCaptureEmbeddedNsys(t *testing.T) {
	b := newCaptureBuilder(t, StatusComplete)
	pb, _ := testTraces(1).MarshalProto()
	writeRows(b, otlpSchema, OTLPPayload{Signal: SignalTraces, Payload: pb})
	os.Mkdir(filepath.Join(b.dir, "nsys"), 0o755)
	os.WriteFile(filepath.Join(b.dir, "nsys", "report.sqlite"), []byte("SQLite format 3\x00rest"), 0o644)
	b.m.External.Nsys = &NsysInfo{SQLite: "nsys/report.sqlite"}
	dir := b.finish()

	tr := decodeCapture(t, dir, &CaptureDecoder{Embedded: []ingest.Decoder{fakeNsys{}}})
	if len(tr.Sources) != 2 || tr.Sources[1].Format != "nsys" || len(tr.GPUOps) != 1 || tr.Str(tr.GPUOps[0].Name) != "ampere_sgemm" ||
		tr.GPUOps[0].Source != 1 || len(tr.Spans) != 1 || tr.Str(tr.Spans[0].Name) != "span-0" {
		t.Fatalf("sources %+v ops %+v spans %d", tr.Sources, tr.GPUOps, len(tr.Spans))
	}
	without := decodeCapture(t, dir, &CaptureDecoder{})
	if !hasWarning(without, "capture-embedded") || len(without.GPUOps) != 0 {
		t.Fatalf("without an nsys decoder: warnings %v", without.Warnings.List)
	}
}

// Through ingest.Open, as `llmprof analyze run.llmprof/` does.
func TestCaptureThroughOpen(t *testing.T) {
	b := newCaptureBuilder(t, StatusComplete)
	pb, _ := testTraces(4).MarshalProto()
	writeRows(b, otlpSchema, OTLPPayload{Signal: SignalTraces, Payload: pb})
	dir := b.finish()
	tr, err := ingest.Open(context.Background(), []string{dir}, []ingest.Decoder{&CaptureDecoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Spans) != 4 || tr.Sources[0].Format != SourceFormat {
		t.Fatalf("%d spans, sources %+v", len(tr.Spans), tr.Sources)
	}
}

// FuzzCapture feeds arbitrary bytes to the decoder as a capture table and as
// a manifest: it must never panic, whatever the files hold.
func FuzzCapture(f *testing.F) {
	b := newCaptureBuilder(f, StatusComplete)
	pb, _ := testTraces(2).MarshalProto()
	writeRows(b, otlpSchema, OTLPPayload{Signal: SignalTraces, Payload: pb}, OTLPPayload{Signal: SignalTraces, Encoding: EncodingJSON, Payload: []byte(`{"resourceSpans":[]}`)})
	writeRows(b, deviceSchema, DeviceSample{GPU: 0, UtilGPUPct: ptr(uint32(1))})
	dir := b.finish()
	otlpTable, _ := os.ReadFile(filepath.Join(dir, TableFile(TableOTLP)))
	devTable, _ := os.ReadFile(filepath.Join(dir, TableFile(TableGPUDevice)))
	manifest, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	f.Add(otlpTable, manifest, uint8(0))
	f.Add(devTable, manifest, uint8(1))
	f.Add(otlpTable[:len(otlpTable)/2], []byte(`{"format":"llmprof-capture","status":"recording"}`), uint8(0))
	f.Fuzz(func(t *testing.T, table, manifest []byte, which uint8) {
		dir := t.TempDir()
		names := []string{TableOTLP, TableGPUDevice, TableClock, TableGPUGPM, TableGPUProcess, TableGPUBuffered}
		os.WriteFile(filepath.Join(dir, TableFile(names[int(which)%len(names)])), table, 0o644)
		os.WriteFile(filepath.Join(dir, ManifestFile), manifest, 0o644)
		tr := ingest.New()
		tr.Sources = []ingest.Source{{Path: dir}}
		dec := &CaptureDecoder{}
		in := &ingest.Input{Path: dir, Dir: true}
		if !dec.Sniff(in) {
			return
		}
		_ = dec.Decode(context.Background(), in, tr)
	})
}
