package otlp_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
)

// batch is a small batch of n spans named name-0…, with the given span IDs
// offset, for building inputs with known content.
func batch(name string, n int, idBase byte) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "svc")
	rs.Resource().Attributes().PutStr("host.name", "host-a")
	ss := rs.ScopeSpans().AppendEmpty()
	for i := 0; i < n; i++ {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1})
		sp.SetSpanID(pcommon.SpanID{idBase, byte(i + 1)})
		sp.SetName(name + "-" + string(rune('0'+i)))
		sp.SetStartTimestamp(pcommon.Timestamp(otlptest.T0 + int64(idBase)*1e6 + int64(i)*1000))
		sp.SetEndTimestamp(pcommon.Timestamp(otlptest.T0 + int64(idBase)*1e6 + int64(i)*1000 + 500))
		sp.Attributes().PutStr("k", "v")
	}
	return td
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func spanNames(tr *ingest.Trace) []string {
	var names []string
	for _, s := range tr.Spans {
		names = append(names, tr.Str(s.Name))
	}
	return names
}

// Bad input never stops the decoder: each case names the file and the
// record, and keeps the rest.
func TestBadInput(t *testing.T) {
	line := func(td ptrace.Traces) string { return string(otlptest.JSON(td)) + "\n" }
	a, b, c := batch("a", 2, 1), batch("b", 2, 2), batch("c", 2, 3)
	pa, pb, pc := otlptest.Proto(a), otlptest.Proto(b), otlptest.Proto(c)
	unknownTypeProto := func() []byte {
		// A span whose second attribute's AnyValue uses field 9, which no
		// OTLP version defines.
		p := append([]byte(nil), pa...)
		kv := []byte{0x0a, 0x05, 'w', 'e', 'i', 'r', 'd', 0x12, 0x02, 0x48, 0x01} // key "weird", value {9: 1}
		return appendSpanAttr(p, kv)
	}
	endBeforeStart := batch("backwards", 1, 4)
	sp := endBeforeStart.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	sp.SetEndTimestamp(sp.StartTimestamp() - 5000)
	dup := batch("dup", 2, 5)
	dup.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1).SetSpanID(pcommon.SpanID{5, 1})
	dangling := batch("orphan", 1, 6)
	dangling.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetParentSpanID(pcommon.SpanID{0xde, 0xad})

	cases := []struct {
		name  string
		data  []byte
		spans []string // span names kept, in order
		// warnings: each is "code@pos: part of message"
		warnings []string
	}{
		{"truncated-last-line.jsonl", []byte(line(a) + line(b) + line(c)[:strings.Index(line(c), `"c-0"`)]),
			[]string{"a-0", "a-1", "b-0", "b-1"}, []string{"malformed-record@line 3: truncated JSON"}},
		{"truncated-inside-second-span.jsonl", []byte(line(a) + line(c)[:strings.Index(line(c), `"c-1"`)]),
			[]string{"a-0", "a-1", "c-0"}, []string{"malformed-record@line 2: truncated JSON: unexpected end of input (truncated?) at byte"}},
		{"malformed-middle-line.jsonl", []byte(line(a) + `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":}]}]}]}` + "\n" + line(c)),
			[]string{"a-0", "a-1", "c-0", "c-1"}, []string{"malformed-record@line 2: malformed JSON: expected a string at byte"}},
		{"not-otlp-line.jsonl", []byte(line(a) + `{"resourceMetrics":[]}` + "\n" + line(c)),
			[]string{"a-0", "a-1", "c-0", "c-1"}, []string{`not-otlp@line 2: JSON object without resourceSpans (keys: resourceMetrics)`}},
		{"truncated-record.pb", otlptest.Frame(pa, pb, pc)[:4+len(pa)+4+len(pb)+4+len(pc)/2],
			[]string{"a-0", "a-1", "b-0", "b-1"}, []string{"truncated@record 3: the file ends inside the record"}},
		{"truncated-record-header.pb", otlptest.Frame(pa, pb)[:4+len(pa)+2],
			[]string{"a-0", "a-1"}, []string{"truncated@record 2: the file ends inside a record header"}},
		{"corrupt-record.pb", otlptest.Frame(pa, []byte{0x0a, 0x05, 0xff, 0xff}, pc),
			[]string{"a-0", "a-1", "c-0", "c-1"}, []string{"malformed-record@record 2"}},
		{"truncated-request.pb", otlptest.Proto(mergeBatches(a, b))[:len(pa)+10],
			[]string{"a-0", "a-1"}, []string{"truncated@byte"}},
		{"unknown-type.json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000000","spanId":"0101000000000000","name":"s","attributes":[{"key":"ok","value":{"intValue":"1"}},{"key":"weird","value":{"fancyValue":3}}]}]}]}]}`),
			[]string{"s"}, []string{`unknown-value-type@: attribute "weird" has a value of unknown type "fancyValue"`}},
		{"unknown-type.pb", unknownTypeProto(),
			[]string{"a-0", "a-1"}, []string{`unknown-value-type@byte: attribute "weird" has a value of unknown type (AnyValue field 9)`}},
		{"end-before-start.json", otlptest.JSON(endBeforeStart),
			[]string{"backwards-0"}, []string{`span-end-before-start@: span "backwards-0" (0401000000000000) ends 5000 ns before it starts`}},
		{"duplicate-ids.json", otlptest.JSON(dup),
			[]string{"dup-0", "dup-1"}, []string{`duplicate-span-id@: span ID 0501000000000000 appears twice`}},
		{"dangling-parent.pb", otlptest.Proto(dangling),
			[]string{"orphan-0"}, []string{`dangling-parent@: 1 span(s) have a parent that is not in the input`}},
		{"bad-ids.json", []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"0101000000000000","kind":"SPAN_KIND_WRONG","name":"s"}]}]}]}`),
			[]string{"s"}, []string{`bad-id@: traceId "xyz" is neither hex nor base64 of 16 bytes`, `bad-enum@: unknown enum value "SPAN_KIND_WRONG"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, c.name, c.data)
			tr, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := spanNames(tr); strings.Join(got, ",") != strings.Join(c.spans, ",") {
				t.Errorf("spans kept = %v, want %v", got, c.spans)
			}
			for _, want := range c.warnings {
				code, rest, _ := strings.Cut(want, "@")
				pos, msg, _ := strings.Cut(rest, ": ")
				found := false
				for _, w := range tr.Warnings.List {
					if w.Code == code && w.Path == path && strings.HasPrefix(w.Pos, pos) && strings.Contains(w.Msg, msg) {
						found = true
					}
				}
				if !found {
					t.Errorf("no warning %s at %q containing %q in:\n%s", code, pos, msg, warningList(tr))
				}
			}
		})
	}
}

func warningList(tr *ingest.Trace) string {
	var b strings.Builder
	for _, w := range tr.Warnings.List {
		b.WriteString("  [" + w.Code + "] " + w.String() + "\n")
	}
	return b.String()
}

func mergeBatches(parts ...ptrace.Traces) ptrace.Traces {
	out := ptrace.NewTraces()
	for _, p := range parts {
		p.ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	return out
}

// appendSpanAttr adds a raw KeyValue to the first span of a one-resource,
// one-scope, one-or-more-span request by rebuilding the lengths around it.
func appendSpanAttr(req, kv []byte) []byte {
	// Decode the nesting request → resource_spans → scope_spans → first span.
	field := func(b []byte) (hdr int, n int) {
		n64, k := binary.Uvarint(b[1:])
		return 1 + k, int(n64)
	}
	rsHdr, rsLen := field(req)
	rs := req[rsHdr : rsHdr+rsLen]
	// Skip the resource (field 1) to reach scope_spans (field 2).
	off := 0
	for rs[off] != 0x12 {
		h, n := field(rs[off:])
		off += h + n
	}
	ssHdr, ssLen := field(rs[off:])
	ss := rs[off+ssHdr : off+ssHdr+ssLen]
	soff := 0
	for ss[soff] != 0x12 {
		h, n := field(ss[soff:])
		soff += h + n
	}
	spHdr, spLen := field(ss[soff:])
	span := ss[soff+spHdr : soff+spHdr+spLen]
	newSpan := append(append(append([]byte(nil), span...), 0x4a, byte(len(kv))), kv...)
	wrap := func(tag byte, body []byte) []byte {
		return append(binary.AppendUvarint([]byte{tag}, uint64(len(body))), body...)
	}
	newSS := append(append(append([]byte(nil), ss[:soff]...), wrap(0x12, newSpan)...), ss[soff+spHdr+spLen:]...)
	newRS := append(append(append([]byte(nil), rs[:off]...), wrap(0x12, newSS)...), rs[off+ssHdr+ssLen:]...)
	return append(wrap(0x0a, newRS), req[rsHdr+rsLen:]...)
}

// A non-OTLP JSON file is an error that names the file and says what it is.
func TestNotOTLP(t *testing.T) {
	data := []byte(`{"name":"my-app","version":"1.2.3","dependencies":{}}`)
	path := writeFile(t, "package.json", data)
	_, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
	if err == nil || !errors.Is(err, ingest.ErrUnknownFormat) || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), `a JSON object with keys "name", "version", "dependencies"`) ||
		!strings.Contains(err.Error(), "llmprof reads OTLP traces") {
		t.Errorf("Open error = %v", err)
	}
	_, err = (&otlp.Decoder{}).DecodeReader(context.Background(), "package.json", bytes.NewReader(data))
	if err == nil || !errors.Is(err, ingest.ErrUnknownFormat) || !strings.Contains(err.Error(), `package.json: `) ||
		!strings.Contains(err.Error(), `keys "name", "version", "dependencies"`) {
		t.Errorf("DecodeReader error = %v", err)
	}
}

// hugeLine streams a JSON line of n bytes without holding it.
type hugeLine struct {
	n, done int64
}

var xs = [64 << 10]byte(bytes.Repeat([]byte{'x'}, 64<<10))

func (h *hugeLine) Read(p []byte) (int, error) {
	if h.done >= h.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), h.n-h.done)
	for i := int64(0); i < k; {
		i += int64(copy(p[i:k], xs[:]))
	}
	if h.done == 0 {
		copy(p, `{"resourceSpans":[{"pad":"`)
	}
	h.done += k
	return int(k), nil
}

// A 1 GiB line is skipped with a warning, without being loaded; the lines
// around it are kept.
func TestGigabyteLine(t *testing.T) {
	first := otlptest.JSON(batch("before", 1, 1))
	last := otlptest.JSON(batch("after", 1, 2))
	const huge = 1 << 30
	r := io.MultiReader(bytes.NewReader(append(first, '\n')), &hugeLine{n: huge}, strings.NewReader("\n"), bytes.NewReader(append(last, '\n')))
	dec := &otlp.Decoder{Options: otlp.Options{MaxRecordBytes: 4 << 20}}
	tr, err := dec.DecodeReader(context.Background(), "big.jsonl", r)
	if err != nil {
		t.Fatal(err)
	}
	if got := spanNames(tr); strings.Join(got, ",") != "before-0,after-0" {
		t.Errorf("spans = %v", got)
	}
	if len(tr.Warnings.List) != 1 {
		t.Fatalf("warnings:\n%s", warningList(tr))
	}
	w := tr.Warnings.List[0]
	if w.Path != "big.jsonl" || w.Pos != "line 2" || w.Code != "record-too-large" ||
		!strings.Contains(w.Msg, "line of 1073741825 bytes is over the 4194304-byte limit") {
		t.Errorf("warning = %s", w)
	}
	if otlp.DefaultMaxRecordBytes >= huge {
		t.Errorf("the default limit (%d) must be below 1 GiB", otlp.DefaultMaxRecordBytes)
	}
}

// A framed record over the limit is skipped, and the next record is read.
func TestFramedRecordOverLimit(t *testing.T) {
	small, big := otlptest.Proto(batch("small", 1, 1)), otlptest.Proto(batch("big", 40, 2))
	data := otlptest.Frame(small, big, small)
	dec := &otlp.Decoder{Options: otlp.Options{MaxRecordBytes: int64(len(big) - 1)}}
	tr, err := dec.DecodeReader(context.Background(), "x.pb", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := spanNames(tr); strings.Join(got, ",") != "small-0,small-0" {
		t.Errorf("spans = %v", got)
	}
	if len(tr.Warnings.List) != 1 || tr.Warnings.List[0].Pos != "record 2" || tr.Warnings.List[0].Code != "record-too-large" {
		t.Errorf("warnings:\n%s", warningList(tr))
	}
}

// A cancelled context stops a long decode with the context's error.
func TestDecodeCancelled(t *testing.T) {
	var lines, framed, raw []byte
	for i := 0; i < 1100; i++ {
		td := batch("s", 1, 1)
		lines = append(append(lines, otlptest.JSON(td)...), '\n')
		framed = append(framed, otlptest.Frame(otlptest.Proto(td))...)
		raw = append(raw, otlptest.Proto(td)...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, data := range map[string][]byte{"json-lines": lines, "framed": framed, "raw": raw} {
		_, err := (&otlp.Decoder{}).DecodeReader(ctx, name, bytes.NewReader(data))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", name, err)
		}
	}
}

// Keys and string values of every length around a varint's one-byte limit
// (127, 128), its two-byte limit, and the string table's own-chunk length
// (8192) are read whole,
// on two spans so that the second meets the first's remembered slots.
func TestAttributeLengths(t *testing.T) {
	lengths := []int{1, 2, 126, 127, 128, 129, 300, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385}
	td := batch("lengths", 2, 1)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		attrs := spans.At(i).Attributes()
		for _, n := range lengths {
			attrs.PutStr(strings.Repeat(string(rune('a'+i)), n), strings.Repeat(string(rune('k'+i)), n)+strconv.Itoa(n))
		}
	}
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: "payload"}}
	if err := otlp.DecodePayload(tr, 0, otlptest.Proto(td), otlp.Proto, ""); err != nil {
		t.Fatal(err)
	}
	if len(tr.Spans) != 2 {
		t.Fatalf("%d spans, want 2", len(tr.Spans))
	}
	for i := range tr.Spans {
		for _, n := range lengths {
			key := strings.Repeat(string(rune('a'+i)), n)
			want := strings.Repeat(string(rune('k'+i)), n) + strconv.Itoa(n)
			if got, ok := tr.AttrString(tr.SpanAttrs(&tr.Spans[i]), key); !ok || got != want {
				t.Errorf("span %d, key of %d bytes: %d bytes (found %v), want %d", i, n, len(got), ok, len(want))
			}
		}
	}
}
