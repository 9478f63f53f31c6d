package attribution

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/llmprof/llmprof/ingest"
)

// builder assembles small traces for table tests.
type builder struct {
	t    *ingest.Trace
	next byte
}

func newBuilder() *builder {
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: "test.jsonl", Format: "test"}}
	return &builder{t: t}
}

// resource adds a resource with service.name and returns its index.
func (b *builder) resource(service string) int32 {
	b.t.Resources = append(b.t.Resources, ingest.Resource{Attrs: []ingest.Attr{b.attr("service.name", service)}})
	return int32(len(b.t.Resources) - 1)
}

func (b *builder) attr(key string, v any) ingest.Attr {
	k := b.t.Strings.Intern(key)
	switch x := v.(type) {
	case string:
		return ingest.NewAttr(k, ingest.StringValue(b.t.Strings.Intern(x)))
	case int:
		return ingest.NewAttr(k, ingest.IntValue(int64(x)))
	case float64:
		return ingest.NewAttr(k, ingest.DoubleValue(x))
	case bool:
		return ingest.NewAttr(k, ingest.BoolValue(x))
	}
	panic("unsupported attribute type")
}

// span adds a span; parent is the ID returned by an earlier call (zero: root).
// attrs alternate key, value.
func (b *builder) span(trace byte, parent ingest.SpanID, res int32, name string, start, end int64, attrs ...any) ingest.SpanID {
	b.next++
	id := ingest.SpanID{b.next}
	s := ingest.Span{TraceID: ingest.TraceID{trace}, ID: id, Parent: parent, Name: b.t.Strings.Intern(name),
		Start: start, End: end, Resource: res, Scope: -1}
	var as []ingest.Attr
	for i := 0; i+1 < len(attrs); i += 2 {
		as = append(as, b.attr(attrs[i].(string), attrs[i+1]))
	}
	s.Attrs = b.t.AddAttrs(as...)
	b.t.Spans = append(b.t.Spans, s)
	return id
}

func (b *builder) event(id ingest.SpanID, name string, at int64, attrs ...any) {
	for i := range b.t.Spans {
		if b.t.Spans[i].ID == id {
			var as []ingest.Attr
			for j := 0; j+1 < len(attrs); j += 2 {
				as = append(as, b.attr(attrs[j].(string), attrs[j+1]))
			}
			b.t.AddEvent(&b.t.Spans[i], ingest.Event{Name: b.t.Strings.Intern(name), Time: at, Attrs: b.t.AddAttrs(as...)})
			return
		}
	}
	panic("no such span")
}

func (b *builder) analyze(opts Options) *Result {
	b.t.Validate()
	return Analyze(b.t, opts)
}

const ms = int64(time.Millisecond)

func checkPartition(t *testing.T, res *Result) {
	t.Helper()
	for i := range res.Requests {
		r := &res.Requests[i]
		var sum int64
		for _, v := range r.Stages {
			if v < 0 {
				t.Fatalf("request %s: negative stage in %v", res.ID(r), r.Stages)
			}
			sum += v
		}
		if sum != r.End-r.Arrival {
			t.Fatalf("request %s: stages sum to %d, E2E is %d", res.ID(r), sum, r.End-r.Arrival)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1 } // within 1 ns

func TestRequestConventions(t *testing.T) {
	type want struct {
		style             Style
		id, tenant, model string
		ttft, tpot, queue float64 // ns; NaN = unknown
		in, out           int
		stages            map[Stage]int64
		estimated         string
	}
	nan := math.NaN()
	cases := []struct {
		name  string
		build func(b *builder)
		want  want
	}{
		{
			name: "llmprof spans with token events",
			build: func(b *builder) {
				res := b.resource("engine")
				r := b.span(1, ingest.SpanID{}, res, "llm.request", 0, 100*ms,
					"llm.request.id", "r1", "llm.tenant", "acme", "llm.model_id", "llama", "llm.input_length", 50, "llm.output_length", 3)
				b.span(1, r, res, "llm.tokenize", 0, 2*ms)
				b.span(1, r, res, "llm.queue", 2*ms, 10*ms)
				b.span(1, r, res, "llm.prefill", 10*ms, 40*ms)
				b.span(1, r, res, "llm.decode", 40*ms, 90*ms)
				b.span(1, r, res, "llm.detokenize", 90*ms, 92*ms)
				b.span(1, r, res, "llm.stream", 92*ms, 99*ms)
				for i, at := range []int64{40 * ms, 60 * ms, 90 * ms} {
					b.event(r, "llm.token", at, "llm.token.index", i)
				}
			},
			want: want{style: StyleLLMProf, id: "r1", tenant: "acme", model: "llama", ttft: float64(40 * ms), tpot: float64(25 * ms), queue: float64(8 * ms), in: 50, out: 3,
				stages: map[Stage]int64{StageTokenize: 2 * ms, StageQueue: 8 * ms, StagePrefill: 30 * ms, StageDecode: 50 * ms, StageDetokenize: 2 * ms, StageStream: 7 * ms, StageOther: 1 * ms}},
		},
		{
			name: "vLLM V1 attributes under a client span",
			build: func(b *builder) {
				client := b.span(2, ingest.SpanID{}, b.resource("tenant-b"), "POST /v1/completions", -1*ms, 81*ms)
				b.span(2, client, b.resource("vllm"), "llm_request", 0, 80*ms,
					"gen_ai.request.id", "cmpl-7", "gen_ai.usage.prompt_tokens", 12, "gen_ai.usage.completion_tokens", 5,
					"gen_ai.latency.time_in_queue", 0.005, "gen_ai.latency.time_to_first_token", 0.030,
					"gen_ai.latency.e2e", 0.080, "gen_ai.latency.time_in_model_prefill", 0.025,
					"gen_ai.latency.time_in_model_decode", 0.050, "gen_ai.latency.time_in_model_inference", 0.075)
			},
			want: want{style: StyleVLLM, id: "cmpl-7", tenant: "tenant-b", model: "unknown", ttft: float64(30 * ms), tpot: float64(50*ms) / 4, queue: float64(5 * ms), in: 12, out: 5,
				stages: map[Stage]int64{StageQueue: 5 * ms, StagePrefill: 25 * ms, StageDecode: 50 * ms}},
		},
		{
			name: "vLLM V0 without prefill/decode split",
			build: func(b *builder) {
				b.span(3, ingest.SpanID{}, b.resource("vllm"), "llm_request", 0, 100*ms,
					"gen_ai.request.id", "v0", "gen_ai.response.model", "opt-125m", "gen_ai.usage.completion_tokens", 11,
					"gen_ai.latency.time_in_queue", 0.010, "gen_ai.latency.time_to_first_token", 0.040, "gen_ai.latency.e2e", 0.100)
			},
			want: want{style: StyleVLLM, id: "v0", tenant: "vllm", model: "opt-125m", ttft: float64(40 * ms), tpot: float64(60*ms) / 10, queue: float64(10 * ms), in: -1, out: 11,
				stages: map[Stage]int64{StageQueue: 10 * ms, StagePrefill: 30 * ms, StageDecode: 60 * ms}, estimated: "prefill"},
		},
		{
			name: "TGI duration strings",
			build: func(b *builder) {
				b.span(4, ingest.SpanID{}, b.resource("text-generation-inference.router"), "generate_stream", 0, 1_300*ms,
					"validation_time", "1.5ms", "queue_time", "48.5ms", "inference_time", "1.2s", "time_per_token", "60ms",
					"total_time", "1.25s")
			},
			want: want{style: StyleTGI, tenant: "text-generation-inference.router", model: "unknown", ttft: float64(110 * ms), tpot: float64(60 * ms), queue: float64(48_500_000), in: -1, out: -1,
				stages: map[Stage]int64{StageTokenize: 1_500_000, StageQueue: 48_500_000, StageInference: 1_200 * ms, StageOther: 50 * ms}, estimated: "tpot"},
		},
		{
			name: "Triton timestamp events",
			build: func(b *builder) {
				r := b.span(5, ingest.SpanID{}, b.resource("triton-inference-server"), "InferRequest", 0, 50*ms)
				m := b.span(5, r, 0, "ensemble_llm", 1*ms, 49*ms, "triton.model_name", "ensemble_llm", "triton.request_id", "tr-1")
				b.event(m, "QUEUE_START", 2*ms)
				b.event(m, "COMPUTE_START", 7*ms)
				b.event(m, "COMPUTE_END", 47*ms)
			},
			want: want{style: StyleTriton, tenant: "triton-inference-server", model: "unknown", ttft: nan, tpot: nan, queue: float64(5 * ms), in: -1, out: -1,
				stages: map[Stage]int64{StageQueue: 5 * ms, StageInference: 40 * ms, StageOther: 5 * ms}},
		},
		{
			name: "SGLang request and slices",
			build: func(b *builder) {
				room := b.span(6, ingest.SpanID{}, b.resource("sglang"), "Bootstrap Room 0x1", 0, 60*ms)
				req := b.span(6, room, 0, "prefill Req 1a2b3c4d", 0, 60*ms, "rid", "1a2b3c4d5e")
				th := b.span(6, req, 0, "Scheduler [TP 0] (host:abc | pid:1)", 0, 60*ms)
				b.span(6, th, 0, "prefill_waiting", 1*ms, 9*ms)
				b.span(6, th, 0, "prefill_forward", 9*ms, 21*ms)
				b.span(6, th, 0, "decode_loop", 21*ms, 59*ms)
			},
			want: want{style: StyleSGLang, id: "1a2b3c4d5e", tenant: "sglang", model: "unknown", ttft: float64(21 * ms), tpot: nan, queue: float64(8 * ms), in: -1, out: -1,
				stages: map[Stage]int64{StageQueue: 8 * ms, StagePrefill: 12 * ms, StageDecode: 38 * ms, StageOther: 2 * ms}, estimated: "ttft"},
		},
		{
			name: "OpenLIT client span",
			build: func(b *builder) {
				b.span(7, ingest.SpanID{}, b.resource("my-app"), "chat gpt-4o", 0, 900*ms,
					"gen_ai.operation.name", "chat", "gen_ai.request.model", "gpt-4o", "gen_ai.usage.input_tokens", 20,
					"gen_ai.usage.output_tokens", 30, "gen_ai.server.time_to_first_token", 0.2, "gen_ai.server.time_per_output_token", 0.02, "enduser.id", "u-9")
			},
			// Decode is placed from the first token for TPOT × 29 (estimated).
			want: want{style: StyleGenAI, tenant: "u-9", model: "gpt-4o", ttft: float64(200 * ms), tpot: float64(20 * ms), queue: nan, in: 20, out: 30,
				stages: map[Stage]int64{StageDecode: 580 * ms, StageOther: 320 * ms}, estimated: "decode"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			tc.build(b)
			res := b.analyze(DefaultOptions)
			checkPartition(t, res)
			if len(res.Requests) != 1 {
				t.Fatalf("found %d requests, want 1", len(res.Requests))
			}
			r := &res.Requests[0]
			w := tc.want
			if id, tenant, model := res.ID(r), res.Tenant(r), res.Model(r); r.Style() != w.style || (w.id != "" && id != w.id) || tenant != w.tenant || model != w.model {
				t.Errorf("got style=%s id=%s tenant=%s model=%s; want %s %s %s %s", r.Style(), id, tenant, model, w.style, w.id, w.tenant, w.model)
			}
			for _, m := range []struct {
				name      string
				got, want float64
			}{{"ttft", r.TTFT, w.ttft}, {"tpot", r.TPOT, w.tpot}, {"queue", r.Queue, w.queue}} {
				if math.IsNaN(m.want) != math.IsNaN(m.got) || (!math.IsNaN(m.want) && !near(m.got, m.want)) {
					t.Errorf("%s = %v, want %v", m.name, m.got, m.want)
				}
			}
			if r.InputTokens != w.in || r.OutputTokens != w.out {
				t.Errorf("tokens in/out = %d/%d, want %d/%d", r.InputTokens, r.OutputTokens, w.in, w.out)
			}
			for st := Stage(0); st < NumStages; st++ {
				if r.Stages[st] != w.stages[st] {
					t.Errorf("stage %s = %d, want %d", st, r.Stages[st], w.stages[st])
				}
			}
			if got := strings.Join(r.Estimated(), ","); !strings.Contains(got, w.estimated) || (w.estimated == "" && got != "") {
				t.Errorf("estimated = %q, want %q", got, w.estimated)
			}
		})
	}
}

func TestNestedRequestSpansCountOnce(t *testing.T) {
	b := newBuilder()
	client := b.span(1, ingest.SpanID{}, b.resource("app"), "chat llama", 0, 100*ms,
		"gen_ai.operation.name", "chat", "gen_ai.server.time_to_first_token", 0.05)
	b.span(1, client, b.resource("vllm"), "llm_request", 5*ms, 95*ms, "gen_ai.latency.time_to_first_token", 0.04, "gen_ai.latency.e2e", 0.09)
	res := b.analyze(DefaultOptions)
	if len(res.Requests) != 1 || res.Requests[0].Style() != StyleVLLM {
		t.Fatalf("got %d requests (%v); want the vLLM span only", len(res.Requests), res.Styles)
	}
	if got := res.Tenant(&res.Requests[0]); got != "app" {
		t.Errorf("tenant = %q, want the calling service", got)
	}
	if len(res.Warnings) != 1 || res.Warnings[0].Code != "nested-request-spans" {
		t.Errorf("warnings = %v", res.Warnings)
	}
}

func TestTenantKeyOption(t *testing.T) {
	b := newBuilder()
	b.span(1, ingest.SpanID{}, b.resource("engine"), "llm.request", 0, 10*ms, "llm.tenant", "a", "customer", "c-42")
	res := b.analyze(Options{TenantKey: "customer"})
	if got := res.Tenant(&res.Requests[0]); got != "c-42" {
		t.Fatalf("tenant = %q, want c-42", got)
	}
}

func TestPartitionOverlapsAndClipping(t *testing.T) {
	// A prefill span containing the decode span (NIXL disaggregation) and a
	// stream span sticking out of the request by 5 ms.
	ivs := []interval{{StagePrefill, 0, 80 * ms}, {StageDecode, 30 * ms, 70 * ms}, {StageStream, 90 * ms, 105 * ms}}
	got, gaps, segs, problems := partition(0, 100*ms, ivs, nil)
	if got[StagePrefill] != 80*ms || got[StageDecode] != 0 || got[StageStream] != 10*ms || got[StageOther] != 10*ms {
		t.Fatalf("partition = %v", got)
	}
	if wantSegs := []StageSegment{{StagePrefill, 0, 80 * ms}, {StageStream, 90 * ms, 100 * ms}}; !slices.Equal(segs, wantSegs) {
		t.Fatalf("segments = %+v, want %+v", segs, wantSegs)
	}
	want := []Gap{{80 * ms, 90 * ms, StagePrefill, StageStream}}
	if len(gaps) != 1 || gaps[0] != want[0] {
		t.Fatalf("gaps = %+v, want %+v", gaps, want)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "stream interval lies 5.000 ms outside") {
		t.Fatalf("problems = %v", problems)
	}
}

func TestPercentileMatchesNumpy(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 10}
	// numpy.percentile([1,2,3,4,10], [50, 90, 99, 25]) = [3., 7.6, 9.76, 2.]
	for p, want := range map[float64]float64{50: 3, 90: 7.6, 99: 9.76, 25: 2, 100: 10, 0: 1} {
		if got := Percentile(xs, p); math.Abs(got-want) > 1e-12 {
			t.Errorf("p%g = %v, want %v", p, got, want)
		}
	}
}

func TestParseRustDuration(t *testing.T) {
	for in, want := range map[string]int64{
		"12.345ms": 12_345_000, "1.2s": 1_200_000_000, "850µs": 850_000, "850us": 850_000,
		"42ns": 42, `"3ms"`: 3_000_000, "1m2s": 62_000_000_000, "0ns": 0,
	} {
		got, ok := parseRustDuration(in)
		if !ok || got != want {
			t.Errorf("parseRustDuration(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "fast", "-3ms", "NaNms"} {
		if _, ok := parseRustDuration(bad); ok {
			t.Errorf("parseRustDuration(%q) accepted", bad)
		}
	}
}

func TestGoodput(t *testing.T) {
	b := newBuilder()
	res := b.resource("e")
	for i, ttft := range []float64{0.1, 0.3, 0.15} {
		b.span(byte(i+1), ingest.SpanID{}, res, "llm_request", 0, 1000*ms,
			"gen_ai.latency.time_to_first_token", ttft, "gen_ai.latency.e2e", 1.0)
	}
	out := b.analyze(Options{SLO: SLO{TTFT: 200 * time.Millisecond}})
	g := out.Overall.Goodput
	if g == nil || g.Good != 2 || math.Abs(g.Share-2.0/3) > 1e-12 {
		t.Fatalf("goodput = %+v", g)
	}
}

// TestStageTotalsOfRequests: the run's stage totals are the sums of its
// requests' stages, each share its total over the sum of all stages (the
// requests' E2E), which stageSums tallies as the requests are built.
func TestStageTotalsOfRequests(t *testing.T) {
	b := newBuilder()
	res := b.resource("engine")
	for tr, d := range []struct{ queue, prefill, decode, end int64 }{{3, 10, 40, 100}, {0, 20, 70, 80}, {5, 5, 9, 30}} {
		off := int64(tr) * 1000 * ms
		r := b.span(byte(tr+1), ingest.SpanID{}, res, "llm.request", off, off+d.end*ms, "llm.request.id", string(rune('a'+tr)))
		b.span(byte(tr+1), r, res, "llm.queue", off+d.queue*ms, off+d.prefill*ms)
		b.span(byte(tr+1), r, res, "llm.prefill", off+d.prefill*ms, off+d.decode*ms)
		b.span(byte(tr+1), r, res, "llm.decode", off+d.decode*ms, off+d.end*ms-2*ms)
	}
	out := b.analyze(DefaultOptions)
	var sums [NumStages]int64
	var total int64
	for i := range out.Requests {
		for st, v := range out.Requests[i].Stages {
			sums[st] += v
			total += v
		}
	}
	if total != 210*ms {
		t.Fatalf("requests' stages add up to %d ns, want the E2E sum %d", total, 210*ms)
	}
	got := map[string]StageTotal{}
	for _, s := range out.Stages {
		got[s.Name] = s
	}
	for st := Stage(0); st < NumStages; st++ {
		if st == StageInference {
			continue
		}
		want := StageTotal{Name: st.String(), TotalMs: float64(sums[st]) / 1e6, Share: float64(sums[st]) / float64(total)}
		if got[st.String()] != want {
			t.Errorf("stage %s: %+v, want %+v", st, got[st.String()], want)
		}
	}
	if _, ok := got["inference"]; ok {
		t.Errorf("inference listed with no time in it: %+v", out.Stages)
	}
}

// TestRequestSize: a Request is 216 bytes (the fields ordered so that no
// word is half padding; docs/otlp.md, the seventeenth pass), its summary
// row one cache line, and a byte holds every stage's bit of present and
// fromSpans.
func TestRequestSize(t *testing.T) {
	if n := unsafe.Sizeof(Request{}); n != 216 {
		t.Errorf("a Request is %d bytes, want 216", n)
	}
	if n := unsafe.Sizeof(summaryRow{}); n != 64 {
		t.Errorf("a summaryRow is %d bytes, want 64, a cache line", n)
	}
	var r Request
	if bits := int(unsafe.Sizeof(r.present)) * 8; bits < int(NumStages) {
		t.Errorf("present has %d bits for %d stages", bits, NumStages)
	}
}

// TestServiceMemo: a resource's service name, read once, is what reading
// its attributes gives, as a string and as a label of each labeler asked,
// for a resource with a service name, one with none, and one whose name is
// no string.
func TestServiceMemo(t *testing.T) {
	b := newBuilder()
	b.resource("app")
	b.t.Resources = append(b.t.Resources, ingest.Resource{})
	b.t.Resources = append(b.t.Resources, ingest.Resource{Attrs: []ingest.Attr{b.attr("service.name", 7)}})
	b.resource("vllm")
	k := newKeyCache(b.t)
	fresh := newKeyCache(b.t)
	l1, l2 := &labeler{t: b.t}, &labeler{t: b.t}
	for range 2 { // the second time from the memo
		for res := range b.t.Resources {
			attrs := b.t.Resources[res].Attrs
			want, _ := fresh.str(attrs, keyService)
			if got := k.service(int32(res)).name; got != want {
				t.Errorf("resource %d: service %q, want %q", res, got, want)
			}
			for _, l := range []*labeler{l1, l2, l1} {
				want, _ := fresh.label(attrs, keyService, l)
				if got := k.serviceLabel(int32(res), l); got != want || l.str(got) != l.str(want) {
					t.Errorf("resource %d: label %d (%q), want %d (%q)", res, got, l.str(got), want, l.str(want))
				}
			}
		}
	}
	if k.service(3).name != "vllm" || k.service(2).name != "7" || k.service(1).name != "" {
		t.Errorf("services %q, %q, %q", k.service(3).name, k.service(2).name, k.service(1).name)
	}
}
