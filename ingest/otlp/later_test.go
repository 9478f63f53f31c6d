package otlp

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
)

// strs is every string of a trace's table, in the order of their IDs.
func strs(tr *ingest.Trace) []string {
	out := make([]string, tr.Strings.Len())
	for i := range out {
		out[i] = tr.Strings.Get(ingest.StrID(i))
	}
	return out
}

func sameStrs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d strings, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: string ID %d is %q, want %q", what, i, got[i], want[i])
		}
	}
}

// The protobuf decode interns a span attribute's string value that misses
// its slot and the cache (a request ID) at the span's end, its table slot
// fetched meanwhile (slotValue), yet every string keeps the ID it had when
// each was interned where it was read (internNow's decode): here each span's second value is new, or repeats an earlier span's, or
// the last one's, and what follows it in the span brings new keys, new
// values (one equal to the waiting one), new strings in arrays, maps,
// events and links, and new names. The two decodes' string tables must
// list the same strings in the same order, and their spans be the same.
// Interning the waiting value at the span's end regardless of what was
// interned meanwhile fails here.
func TestLaterStringKeepsIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range 3000 {
		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1, byte(i >> 8), byte(i)})
		sp.SetSpanID(pcommon.SpanID{2, byte(i >> 8), byte(i)})
		sp.SetName("span")
		if rng.IntN(8) == 0 {
			sp.SetName("name-" + strconv.Itoa(i))
		}
		sp.SetStartTimestamp(pcommon.Timestamp(otlptest.T0 + int64(i)*1000))
		sp.SetEndTimestamp(pcommon.Timestamp(otlptest.T0 + int64(i)*1000 + 500))
		a := sp.Attributes()
		a.PutStr("kind", "chat")
		id := "req-" + strconv.Itoa(i)
		switch rng.IntN(6) {
		case 0:
			id = "req-" + strconv.Itoa(rng.IntN(i+1)) // an earlier span's
		case 1:
			id = "req-same"
		case 2:
			id = ""
		}
		a.PutStr("request.id", id)
		for j := range rng.IntN(5) {
			k := "k" + strconv.Itoa(j)
			switch rng.IntN(9) {
			case 0:
				k = "key-" + strconv.Itoa(i) // a new key
				a.PutStr(k, "v")
			case 1:
				a.PutStr(k, "val-"+strconv.Itoa(i)) // a new value
			case 2:
				a.PutStr(k, id) // the waiting one
			case 3:
				s := a.PutEmptySlice(k)
				s.AppendEmpty().SetStr("elem-" + strconv.Itoa(i))
				s.AppendEmpty().SetStr(id)
			case 4:
				m := a.PutEmptyMap(k)
				m.PutStr("mk-"+strconv.Itoa(i), "mv-"+strconv.Itoa(i))
			case 5:
				a.PutInt(k, int64(i))
			case 6:
				a.PutStr(k, "")
			default:
				a.PutStr(k, "common")
			}
		}
		if rng.IntN(4) == 0 {
			ev := sp.Events().AppendEmpty()
			ev.SetName("event-" + strconv.Itoa(i%7))
			ev.SetTimestamp(pcommon.Timestamp(otlptest.T0 + int64(i)*1000 + 100))
			ev.Attributes().PutStr("ek", "ev-"+strconv.Itoa(i))
		}
		if rng.IntN(6) == 0 {
			l := sp.Links().AppendEmpty()
			l.SetTraceID(pcommon.TraceID{3, byte(i)})
			l.SetSpanID(pcommon.SpanID{4, byte(i)})
			l.Attributes().PutStr("lk", "link-"+strconv.Itoa(i))
		}
		if rng.IntN(5) == 0 {
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage("status-" + strconv.Itoa(i))
		}
	}
	payload := otlptest.Proto(td)
	var traces [2]*ingest.Trace
	for n, now := range []bool{true, false} {
		internNow = now
		tr := ingest.New()
		tr.Sources = []ingest.Source{{Path: "payload"}}
		err := DecodePayload(tr, 0, payload, Proto, "")
		internNow = false
		if err != nil {
			t.Fatal(err)
		}
		traces[n] = tr
	}
	want, got := traces[0], traces[1]
	sameStrs(t, "string table", strs(got), strs(want))
	if !reflect.DeepEqual(got.Spans, want.Spans) || !reflect.DeepEqual(got.AttrArena, want.AttrArena) ||
		!reflect.DeepEqual(got.Arrays, want.Arrays) || !reflect.DeepEqual(got.Maps, want.Maps) ||
		!reflect.DeepEqual(got.Warnings, want.Warnings) {
		t.Fatal("the spans, attributes or warnings differ from the decode that interns each string where it is read")
	}
	if len(got.Spans) != 3000 {
		t.Fatalf("%d spans, want 3000", len(got.Spans))
	}
}

// A span dropped as malformed after its request ID was read still leaves
// the ID in the table, before the next span's strings, as it did when the
// ID was interned where it was read: a waiting string is interned when
// its span is dropped too.
func TestLaterStringOfDroppedSpan(t *testing.T) {
	str := func(b []byte, num protowire.Number, s string) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), []byte(s))
	}
	msg := func(b []byte, num protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
	}
	attr := func(b []byte, k, v string) []byte {
		return msg(b, 9, str(str(nil, 1, k), 2, string(str(nil, 1, v))))
	}
	var ss []byte
	for i, bad := range []bool{false, true, false} {
		var sp []byte
		sp = msg(sp, 1, []byte("0123456789abcdef"))
		sp = msg(sp, 2, []byte{1, 2, 3, 4, 5, 6, 7, byte(i)})
		sp = str(sp, 5, "span")
		sp = attr(sp, "kind", "chat")
		sp = attr(sp, "request.id", "req-"+strconv.Itoa(i))
		if bad {
			sp = protowire.AppendBytes(protowire.AppendTag(sp, 6, protowire.BytesType), nil) // kind must be a varint
		}
		sp = attr(sp, "after", "after-"+strconv.Itoa(i))
		ss = msg(ss, 2, sp)
	}
	req := msg(nil, 1, msg(nil, 2, ss))
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: "payload"}}
	if err := DecodePayload(tr, 0, req, Proto, ""); err != nil {
		t.Fatal(err)
	}
	if len(tr.Spans) != 2 || len(tr.Warnings.List) != 1 {
		t.Fatalf("%d spans and warnings %v, want 2 spans and one warning", len(tr.Spans), tr.Warnings.List)
	}
	sameStrs(t, "string table", strs(tr), []string{"", "span", "kind", "chat", "request.id", "req-0", "after", "after-0", "req-1", "req-2", "after-2"})
}
