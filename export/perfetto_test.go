package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/internal/golden"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/synth"
)

const base = int64(1_700_000_000_000_000_000)

// smallTrace is a hand-built merged trace with every kind of record the
// export draws, and the awkward cases: concurrent sibling spans, NVTX ranges
// that overlap without nesting, a kernel that starts before its launch, a
// string that needs escaping, samples of a device, a process and neither.
func smallTrace() *ingest.Trace {
	t := ingest.New()
	t.Sources = []ingest.Source{
		{Path: "traces/otlp.jsonl", Clock: ingest.ClockDomain{Name: "realtime@a", Kind: ingest.ClockRealtime}},
		{Path: "profiles/report1.sqlite", Clock: ingest.ClockDomain{Name: "nsys:report1", Kind: ingest.ClockNsysSession}},
	}
	s := t.Strings.Intern
	svc := ingest.NewAttr(s("service.name"), ingest.StringValue(s("vllm-engine")))
	t.Resources = []ingest.Resource{{Attrs: []ingest.Attr{svc}}}
	tr := ingest.TraceID{0x4b, 0xf9}
	req := ingest.SpanID{0xa1}
	otlp := func(id, parent ingest.SpanID, name string, start, end int64, attrs ...ingest.Attr) ingest.Span {
		return ingest.Span{TraceID: tr, ID: id, Parent: parent, Name: s(name), Start: base + start, End: base + end,
			Resource: 0, Scope: -1, Origin: ingest.OriginOTLP, Kind: ingest.SpanKindInternal, Attrs: t.AddAttrs(attrs...)}
	}
	request := otlp(req, ingest.SpanID{}, "llm.request", 1_000, 900_000,
		ingest.NewAttr(s("llm.request.id"), ingest.StringValue(s("cmpl-1"))),
		ingest.NewAttr(s("llm.input_length"), ingest.IntValue(512)),
		ingest.NewAttr(s("llm.cache_hit_ratio"), ingest.DoubleValue(0.25)),
		ingest.NewAttr(s("note"), ingest.StringValue(s("quote \" backslash \\ newline \n tab \t"))))
	request.Kind = ingest.SpanKindServer
	request.Extra = t.AddExtra([]ingest.Event{
		{Name: s("llm.token"), Time: base + 400_000, Attrs: t.AddAttrs(ingest.NewAttr(s("llm.token.index"), ingest.IntValue(0)))},
		{Name: s("llm.token"), Time: base + 600_000, Attrs: t.AddAttrs(ingest.NewAttr(s("llm.token.index"), ingest.IntValue(1)))},
	}, nil)
	step := ingest.SpanID{0xb1, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}
	t.Spans = append(t.Spans,
		request,
		otlp(ingest.SpanID{0xa2}, req, "llm.queue", 2_000, 100_000),
		otlp(step, req, "llm.prefill", 100_000, 400_000),
		// Two concurrent children: they cannot nest in one lane.
		otlp(ingest.SpanID{0xa4}, req, "llm.detokenize", 600_000, 800_000),
		otlp(ingest.SpanID{0xa5}, req, "llm.stream", 700_000, 900_000),
		// A second request overlapping the first, in another trace.
		ingest.Span{TraceID: ingest.TraceID{0x77}, ID: ingest.SpanID{0xc1}, Name: s("llm.request"), Start: base + 500_000, End: base + 1_500_000,
			Resource: 0, Scope: -1, Origin: ingest.OriginOTLP, Status: ingest.StatusError, StatusMsg: s("timeout")},
	)
	nv := func(name string, start, end int64, tid uint32) ingest.Span {
		return ingest.Span{Name: s(name), Start: base + start, End: base + end, Pid: 4242, Tid: tid, Source: 1, Origin: ingest.OriginNVTX, Resource: -1, Scope: -1}
	}
	call := func(name string, start, end int64, corr uint32) ingest.APICall {
		return ingest.APICall{Name: s(name), Start: base + start, End: base + end, Pid: 4242, Tid: 4243, Correlation: corr, Source: 1, Origin: ingest.OriginCUDARuntime}
	}
	t.APICalls = append(t.APICalls,
		call("cudaLaunchKernel", 110_000, 115_000, 11),
		call("cudaMemcpyAsync", 120_000, 124_000, 12),
		call("cudaLaunchKernel", 300_000, 305_000, 13),
	)
	t.Spans = append(t.Spans,
		nv("prefill span_id="+step.String(), 101_000, 399_000, 4243),
		// Start/end ranges on another thread that overlap without nesting.
		nv("load weights", 10_000, 50_000, 4250),
		nv("warmup", 30_000, 70_000, 4250),
	)
	op := func(name string, kind ingest.GPUOpKind, stream uint32, start, end int64, corr uint32) ingest.GPUOp {
		return ingest.GPUOp{Name: s(name), Kind: kind, Stream: stream, Start: base + start, End: base + end, Correlation: corr, Pid: 4242, Device: 0, Source: 1,
			Shape: t.InternShape(ingest.OpShape{Grid: [3]uint32{132, 1, 1}, Block: [3]uint16{256, 1, 1}})}
	}
	memcpy := op("[CUDA memcpy Host-to-Device]", ingest.OpMemcpy, 7, 126_000, 140_000, 12)
	memcpy.Copy = ingest.CopyHtoD
	memcpy.Shape = t.InternShape(ingest.OpShape{Bytes: 1 << 20, Grid: [3]uint32{132, 1, 1}, Block: [3]uint16{256, 1, 1}})
	t.GPUOps = append(t.GPUOps,
		op("ampere_bf16_gemm_128x128", ingest.OpKernel, 7, 118_000, 260_000, 11),
		memcpy,
		// Starts 2 µs before its launch call: still drawn, arrow bound inside.
		op("flash_fwd_kernel", ingest.OpKernel, 13, 298_000, 380_000, 13),
	)
	t.Samples = append(t.Samples,
		ingest.Sample{Time: base + 100_000, Value: 83, Metric: s("gpu.sm_util"), Device: 0, Instance: -1, Source: 1},
		ingest.Sample{Time: base + 200_000, Value: 91.5, Metric: s("gpu.sm_util"), Device: 0, Instance: -1, Source: 1},
		ingest.Sample{Time: base + 150_000, Value: 40, Metric: s("process.sm_util"), Pid: 4242, Device: 0, Instance: -1, Source: 1},
		ingest.Sample{Time: base + 150_000, Value: 1.5, Metric: s("host.load"), Device: -1, Instance: -1, Source: 1},
	)
	t.Devices = []ingest.Device{{ID: 0, Name: "NVIDIA H200", Source: 1}}
	t.Processes = []ingest.Process{{Pid: 4242, Name: "python3", Source: 1}}
	t.Threads = []ingest.Thread{{Pid: 4242, Tid: 4243, Name: "EngineCore_0", Source: 1}}
	t.Sort()
	return t
}

// mirrorLinks links each OTLP span to the NVTX ranges naming its span ID,
// as the command does with align.Mirrors.
func mirrorLinks(t *ingest.Trace) []Link {
	var links []Link
	for i := range t.Spans {
		if t.Spans[i].Origin != ingest.OriginOTLP {
			continue
		}
		key := "span_id=" + t.Spans[i].ID.String()
		for j := range t.Spans {
			if t.Spans[j].Origin == ingest.OriginNVTX && strings.Contains(t.Str(t.Spans[j].Name), key) {
				links = append(links, Link{From: i, To: j})
			}
		}
	}
	return links
}

func export(t *testing.T, tr *ingest.Trace, opts PerfettoOptions) ([]byte, PerfettoStats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := WritePerfetto(&buf, tr, opts)
	if err != nil {
		t.Fatalf("WritePerfetto: %v", err)
	}
	return buf.Bytes(), st
}

func TestPerfettoGolden(t *testing.T) {
	tr := smallTrace()
	out, st := export(t, tr, PerfettoOptions{Links: mirrorLinks(tr), Metadata: map[string]any{"inputs": []string{"traces/otlp.jsonl", "profiles/report1.sqlite"}}})
	golden.Check(t, "testdata/perfetto_small.json", out)
	checkExport(t, tr, out, st, true)
	if st.LinkFlows != 1 || st.LaunchFlows != 3 || st.OverflowLanes != 3 {
		t.Errorf("stats %+v, want 1 link, 3 launch arrows, 3 overflow lanes (concurrent siblings, overlapping NVTX, overlapping ops on stream 7)", st)
	}
}

// event is a parsed trace event, numbers kept exact.
type event struct {
	Ph      string                  `json:"ph"`
	Name    string                  `json:"name"`
	Cat     string                  `json:"cat"`
	Pid     *int64                  `json:"pid"`
	Tid     *int64                  `json:"tid"`
	Ts      json.Number             `json:"ts"`
	Dur     json.Number             `json:"dur"`
	ID      *int64                  `json:"id"`
	ID2     *struct{ Local string } `json:"id2"`
	BindID  string                  `json:"bind_id"`
	FlowIn  bool                    `json:"flow_in"`
	FlowOut bool                    `json:"flow_out"`
	Bp      string                  `json:"bp"`
	Args    map[string]any          `json:"args"`
}

type parsed struct {
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	OtherData       map[string]any `json:"otherData"`
	TraceEvents     []event        `json:"traceEvents"`
}

// ns converts an exported µs timestamp ("123.456") back to exact Unix ns.
func ns(t *testing.T, n json.Number, baseNs int64) int64 {
	t.Helper()
	s := string(n)
	neg := strings.HasPrefix(s, "-")
	whole, frac, ok := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if !ok || len(frac) != 3 || err1 != nil || err2 != nil {
		t.Fatalf("timestamp %q is not µs with three decimals", n)
	}
	v := w*1000 + f
	if neg {
		v = -v
	}
	return v + baseNs
}

// checkExport parses the export back and checks what every viewer needs:
// each event has the fields its phase requires, every record is drawn once
// at its exact time, slices on a track nest, and every arrow joins two
// events that exist.
func checkExport(t *testing.T, tr *ingest.Trace, out []byte, st PerfettoStats, exactTimes bool) {
	t.Helper()
	var p parsed
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("export does not parse back: %v", err)
	}
	if p.DisplayTimeUnit != "ns" || p.OtherData["generator"] == nil {
		t.Errorf("header: displayTimeUnit %q otherData %v", p.DisplayTimeUnit, p.OtherData)
	}
	if st.Events != len(p.TraceEvents) {
		t.Errorf("stats say %d events, file has %d", st.Events, len(p.TraceEvents))
	}
	count := map[string]int{}
	type track struct{ pid, tid int64 }
	slices_ := map[track][][2]int64{}
	type cookie struct {
		pid   int64
		local string
	}
	async := map[cookie][]event{}
	flowStarts := map[int64]event{}
	var flowEnds []event
	bindOut, bindIn := map[string]int{}, map[string]int{}
	named := map[int64]bool{}
	starts := map[int64]int{}
	for i := range tr.Spans {
		starts[tr.Spans[i].Start]++
	}
	for i := range tr.APICalls {
		starts[tr.APICalls[i].Start]++
	}
	for i := range tr.GPUOps {
		starts[tr.GPUOps[i].Start]++
	}
	for i, e := range p.TraceEvents {
		count[e.Ph]++
		fail := func(why string) { t.Fatalf("event %d (%+v): %s", i, e, why) }
		if e.Pid == nil {
			fail("no pid")
		}
		if e.Ph != "M" && e.Ts == "" {
			fail("no ts")
		}
		switch e.Ph {
		case "M":
			if e.Args["name"] == nil && e.Args["sort_index"] == nil {
				fail("metadata without args")
			}
			switch e.Name {
			case "process_name":
				named[*e.Pid] = true
			case "thread_name", "thread_sort_index":
				if e.Tid == nil {
					fail("thread metadata without tid")
				}
			case "process_sort_index":
			default:
				fail("unknown metadata " + e.Name)
			}
		case "X":
			if e.Name == "" || e.Tid == nil || e.Dur == "" || e.Cat == "" {
				fail("complete event without name, tid, dur or cat")
			}
			from := ns(t, e.Ts, st.BaseNs)
			to := from + ns(t, e.Dur, 0)
			if to < from {
				fail("negative duration")
			}
			if exactTimes && starts[from] == 0 {
				fail("starts at a time no record starts at")
			}
			k := track{*e.Pid, *e.Tid}
			slices_[k] = append(slices_[k], [2]int64{from, to})
		case "b", "e", "n":
			if e.Name == "" || e.Cat == "" || e.ID2 == nil || e.ID2.Local == "" {
				fail("async event without name, cat or id2.local")
			}
			k := cookie{*e.Pid, e.ID2.Local}
			async[k] = append(async[k], e)
		case "C":
			if e.Name == "" {
				fail("counter without name")
			}
			if _, ok := e.Args["value"].(json.Number); !ok {
				fail("counter without a numeric value")
			}
		case "s":
			if e.ID == nil || e.Tid == nil || e.Cat == "" || e.Name == "" {
				fail("flow start without id, tid, cat or name")
			}
			flowStarts[*e.ID] = e
		case "f":
			if e.ID == nil || e.Tid == nil || e.Bp != "e" {
				fail("flow end without id, tid or bp=e")
			}
			flowEnds = append(flowEnds, e)
		default:
			fail("unexpected phase")
		}
		if e.BindID != "" {
			if e.FlowOut {
				bindOut[e.BindID]++
			}
			if e.FlowIn {
				bindIn[e.BindID]++
			}
			if !e.FlowIn && !e.FlowOut {
				fail("bind_id without direction")
			}
		}
		if e.Ph != "M" && !named[*e.Pid] {
			fail("pid has no process_name before its first event")
		}
	}
	// Every record drawn once.
	otlp, other := 0, len(tr.APICalls)
	for i := range tr.Spans {
		if tr.Spans[i].Origin == ingest.OriginOTLP {
			otlp++
		} else {
			other++
		}
	}
	if count["b"] != otlp || count["e"] != otlp || count["X"] != other+len(tr.GPUOps) || count["C"] != len(tr.Samples) {
		t.Errorf("event counts %v; want %d b/e, %d X, %d C", count, otlp, other+len(tr.GPUOps), len(tr.Samples))
	}
	// Slices on a thread track nest.
	for k, ss := range slices_ {
		slices.SortStableFunc(ss, func(a, b [2]int64) int {
			if a[0] != b[0] {
				return int(a[0] - b[0])
			}
			return int(b[1] - a[1])
		})
		var stack [][2]int64
		for _, s := range ss {
			for len(stack) > 0 && stack[len(stack)-1][1] <= s[0] && stack[len(stack)-1][0] < s[0] {
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 && stack[len(stack)-1][1] < s[1] {
				t.Fatalf("track %v: slice %v overlaps %v without nesting", k, s, stack[len(stack)-1])
			}
			stack = append(stack, s)
		}
	}
	// Async begin/end pair up like brackets per cookie, in file order.
	for k, evs := range async {
		var stack []event
		for _, e := range evs {
			switch e.Ph {
			case "b":
				stack = append(stack, e)
			case "e":
				if len(stack) == 0 {
					t.Fatalf("cookie %v: end without begin", k)
				}
				b := stack[len(stack)-1]
				if b.Name != e.Name || ns(t, e.Ts, 0) < ns(t, b.Ts, 0) {
					t.Fatalf("cookie %v: %q [%s] closed by %q [%s]", k, b.Name, b.Ts, e.Name, e.Ts)
				}
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) != 0 {
			t.Fatalf("cookie %v: %d slices never end", k, len(stack))
		}
	}
	// Launch arrows: every end has its start, and both lie inside a slice of
	// their thread. The slices are sorted by start (above): a time is
	// inside one when the latest end among those starting at or before it
	// (reach, a running maximum) is at or after it.
	reach := map[track][]int64{}
	for k, ss := range slices_ {
		r := make([]int64, len(ss))
		for i, s := range ss {
			r[i] = s[1]
			if i > 0 {
				r[i] = max(r[i], r[i-1])
			}
		}
		reach[k] = r
	}
	inside := func(e event) bool {
		at := ns(t, e.Ts, st.BaseNs)
		k := track{*e.Pid, *e.Tid}
		ss := slices_[k]
		n := sort.Search(len(ss), func(i int) bool { return ss[i][0] > at }) // ss[:n] start ≤ at
		return n > 0 && reach[k][n-1] >= at
	}
	for _, f := range flowEnds {
		s, ok := flowStarts[*f.ID]
		if !ok {
			t.Fatalf("flow end %+v has no start", f)
		}
		if !inside(s) || !inside(f) {
			t.Fatalf("flow %d: start %+v or end %+v is not inside a slice", *f.ID, s, f)
		}
	}
	if len(flowEnds) != st.LaunchFlows {
		t.Errorf("%d flow ends, stats say %d", len(flowEnds), st.LaunchFlows)
	}
	// Caller links: every arrow that leaves arrives somewhere and vice versa.
	for id, n := range bindOut {
		if n != 1 || bindIn[id] == 0 {
			t.Errorf("bind_id %s: %d sources, %d targets", id, n, bindIn[id])
		}
	}
	for id := range bindIn {
		if bindOut[id] == 0 {
			t.Errorf("bind_id %s has targets but no source", id)
		}
	}
}

func TestPerfettoGrouping(t *testing.T) {
	tr := smallTrace()
	// Place the first request under tenant "acme"; its children follow it;
	// the second request is unlisted and falls back to its service.
	g := BySpanID(map[ingest.SpanID]Placement{{0xa1}: {Group: "tenant acme", Track: "cmpl-1"}})
	out, st := export(t, tr, PerfettoOptions{Grouping: g, NoSpanEvents: true})
	checkExport(t, tr, out, st, true)
	var p parsed
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	pidOf := map[string]int64{}
	for _, e := range p.TraceEvents {
		if e.Ph == "M" && e.Name == "process_name" {
			pidOf[e.Args["name"].(string)] = *e.Pid
		}
	}
	acme, svc := pidOf["tenant acme"], pidOf["vllm-engine"]
	if acme == 0 || svc == 0 {
		t.Fatalf("processes %v, want 'tenant acme' and 'vllm-engine'", pidOf)
	}
	for _, e := range p.TraceEvents {
		if e.Ph != "b" {
			continue
		}
		want := acme
		if e.Args["trace_id"] == (ingest.TraceID{0x77}).String() {
			want = svc
		}
		if *e.Pid != want {
			t.Errorf("span %q in pid %d, want %d", e.Name, *e.Pid, want)
		}
		if e.Ph == "n" {
			t.Error("span events drawn although NoSpanEvents")
		}
	}
}

// TestPerfettoLinksSkipped: links that cannot be drawn are counted, not
// written half way; a target that starts before its source carries the
// arrow's start instead.
func TestPerfettoLinksSkipped(t *testing.T) {
	tr := smallTrace()
	idx := map[string]int{}
	for i := range tr.Spans {
		idx[tr.Str(tr.Spans[i].Name)] = i
	}
	links := []Link{
		{From: -1, To: 0},                                  // out of range
		{From: 0, To: len(tr.GPUOps), ToOp: true},          // out of range
		{From: len(tr.Spans), To: idx["warmup"]},           // out of range: API calls are no spans
		{From: idx["llm.queue"], To: 1, ToOp: true},        // drawn: queue → memcpy
		{From: idx["llm.prefill"], To: 1, ToOp: true},      // the memcpy already has an arrow in
		{From: idx["llm.stream"], To: idx["warmup"]},       // drawn, reversed: warmup starts first
		{From: idx["llm.stream"], To: idx["load weights"]}, // llm.stream is now an arrow's end
	}
	out, st := export(t, tr, PerfettoOptions{Links: links})
	if st.LinksSkipped != 5 || st.LinkFlows != 2 {
		t.Errorf("stats %+v, want 5 skipped and 2 drawn", st)
	}
	checkExport(t, tr, out, st, true)
	// The reversed arrow starts at warmup.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, `"name":"warmup"`) && !strings.Contains(line, `"flow_out":true`) {
			t.Errorf("warmup does not start the reversed arrow: %s", line)
		}
	}
}

// countingWriter records how the export reaches the writer.
type countingWriter struct {
	writes, largest, total int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	w.largest = max(w.largest, len(p))
	w.total += len(p)
	return len(p), nil
}

// TestPerfettoStreams: a large export reaches the writer in bounded chunks
// as it is produced, never as one document built in memory.
func TestPerfettoStreams(t *testing.T) {
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: "big.sqlite"}}
	name := tr.Strings.Intern("gemm")
	for i := range int64(50_000) {
		tr.GPUOps = append(tr.GPUOps, ingest.GPUOp{Start: base + i*1000, End: base + i*1000 + 900, Name: name, Stream: uint32(i % 4), Device: int16(i % 2)})
	}
	var w countingWriter
	st, err := WritePerfetto(&w, tr, PerfettoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.total < 5<<20 || w.writes < 10 || w.largest > 512<<10 {
		t.Errorf("%d bytes in %d writes, largest %d: want a multi-MB export in chunks ≤ 512 KiB", w.total, w.writes, w.largest)
	}
	if st.Events < 50_000 {
		t.Errorf("%d events", st.Events)
	}
}

func TestAppendJSONString(t *testing.T) {
	cases := []string{"", "plain", "quote \" and \\", "ctl \x00\x01\x1f\n\r\t", "utf8 µs → ✓", "bad \xff\xfe utf8", "line\u2028sep\u2029"}
	for _, s := range cases {
		b := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("%q encodes to invalid JSON %s: %v", s, b, err)
			continue
		}
		// encoding/json replaces each invalid byte, as appendJSONString does.
		ref, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if back != want {
			t.Errorf("%q round-trips to %q", s, back)
		}
	}
}

func TestAppendMicros(t *testing.T) {
	cases := map[int64]string{0: "0.000", 1: "0.001", 999: "0.999", 1000: "1.000", 1234567: "1234.567", -1: "-0.001", -1234567: "-1234.567"}
	for in, want := range cases {
		if got := string(appendMicros(nil, in)); got != want {
			t.Errorf("appendMicros(%d) = %s, want %s", in, got, want)
		}
	}
}

func TestPackLanes(t *testing.T) {
	cases := []struct {
		name  string
		items []interval
		mode  nesting
		want  []int32
	}{
		{"nested", []interval{{0, 10, -1}, {1, 5, -1}, {2, 3, -1}, {6, 9, -1}}, nestContained, []int32{0, 0, 0, 0}},
		{"overlap", []interval{{0, 10, -1}, {5, 15, -1}, {10, 20, -1}}, nestContained, []int32{0, 1, 0}},
		{"touching", []interval{{0, 10, -1}, {10, 20, -1}}, nestContained, []int32{0, 0}},
		{"same start, longer first", []interval{{0, 10, -1}, {0, 5, -1}, {0, 0, -1}}, nestContained, []int32{0, 0, 0}},
		{"contained but not a child", []interval{{0, 100, -1}, {10, 20, -1}}, nestParent, []int32{0, 1}},
		{"child of its parent", []interval{{0, 100, -1}, {10, 20, 0}}, nestParent, []int32{0, 0}},
		{"concurrent siblings", []interval{{0, 100, -1}, {10, 50, 0}, {40, 90, 0}}, nestParent, []int32{0, 0, 1}},
		{"child outliving its parent", []interval{{0, 100, -1}, {50, 150, 0}}, nestParent, []int32{0, 1}},
		{"stream: contained op goes beside", []interval{{0, 100, -1}, {10, 20, -1}, {100, 120, -1}}, nestNever, []int32{0, 1, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := packLanes(tc.items, tc.mode)
			if !slices.Equal(got, tc.want) {
				t.Errorf("lanes %v, want %v", got, tc.want)
			}
		})
	}
}

func ExampleWritePerfetto() {
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: "report.sqlite"}}
	t.GPUOps = []ingest.GPUOp{{Start: 1_500_000_000, End: 1_500_002_500, Name: t.Strings.Intern("gemm"), Stream: 7, Device: 0}}
	var buf bytes.Buffer
	st, err := WritePerfetto(&buf, t, PerfettoOptions{})
	fmt.Println(st.Events, st.BaseNs, err)
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, `"ph":"X"`) {
			fmt.Println(strings.TrimPrefix(line, ","))
		}
	}
	// Output:
	// 5 1000000000 <nil>
	// {"ph":"X","cat":"kernel","name":"gemm","pid":100000000,"tid":100000001,"ts":500000.000,"dur":2.500,"args":{"device":0,"stream":7,"grid":"[0,0,0]","block":"[0,0,0]"}}
}

// TestPerfettoRealOTLP exports the shared real OTLP samples (Jaeger, OTLP
// proto examples) and checks the result like the golden one.
func TestPerfettoRealOTLP(t *testing.T) {
	dir := shareddata.Path(t, "testdata/otlp")
	tr, err := ingest.Open(context.Background(), []string{dir}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := align.Align(tr, align.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	out, st := export(t, tr, PerfettoOptions{})
	checkExport(t, tr, out, st, true)
	t.Logf("%d spans from %d files → %d events", len(tr.Spans), len(tr.Sources), st.Events)
}

// TestPerfettoDemoRun exports the demo's serving run — its OTLP file decoded
// by the OTLP decoder, merged with its GPU-side trace on a second clock,
// aligned — and checks that it parses back with every field, nesting and
// arrow in place. Seed 7's 300 ms of arrivals: 24,700 GPU ops on both
// engines, 295 steps to align by, overflow lanes (seed 1's 500 ms had
// 63,700 ops; the check of every event is linear in them).
func TestPerfettoDemoRun(t *testing.T) {
	cfg := synth.DefaultConfig(7, 300*time.Millisecond)
	cfg.GPUClock = synth.ClockError{OffsetNs: -1_250_000_000, DriftPPM: 35, JitterNs: 5_000}
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.jsonl")
	var buf bytes.Buffer
	if err := run.WriteOTLP(&buf, synth.StyleLLM, synth.JSONLines); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	spans, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr := ingest.Merge(spans, run.GPUTrace())
	tr.Validate()
	res, err := align.Align(tr, align.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Fits[1]; f.Status != align.StatusRefined {
		t.Fatalf("GPU side %s: %v", f.Status, f.Warnings)
	}
	var links []Link
	for _, m := range align.Mirrors(tr) {
		links = append(links, Link{From: m.OTLP, To: m.NVTX})
	}
	out, st := export(t, tr, PerfettoOptions{Links: links, Metadata: map[string]any{"alignment": res.Fits}})
	checkExport(t, tr, out, st, true)
	if st.LaunchFlows != len(run.Ops) || st.LinkFlows != len(run.Steps) || st.LinksSkipped != 0 {
		t.Errorf("stats %+v: want %d launch arrows and %d mirror arrows", st, len(run.Ops), len(run.Steps))
	}
	t.Logf("%d spans, %d GPU ops → %d events, %d bytes; %+v", len(tr.Spans), len(tr.GPUOps), st.Events, len(out), st)
}
