package otlptest

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Proto is the binary ExportTraceServiceRequest of td, as pdata writes it.
func Proto(td ptrace.Traces) []byte {
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		panic(err) // pdata marshals any Traces; a failure is a bug here
	}
	return b
}

// JSON is the compact OTLP/JSON of td, as pdata (and the collector's file
// exporter) writes it: hex IDs, 64-bit integers as strings, integer enums.
func JSON(td ptrace.Traces) []byte {
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		panic(err)
	}
	return b
}

// PrettyJSON is JSON indented, as a person saves a document.
func PrettyJSON(td ptrace.Traces) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, JSON(td), "", "  "); err != nil {
		panic(err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// Split returns one Traces per scope of td (each with its resource), the way
// an exporter that flushes per scope batches them.
func Split(td ptrace.Traces) []ptrace.Traces {
	var out []ptrace.Traces
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			part := ptrace.NewTraces()
			prs := part.ResourceSpans().AppendEmpty()
			rs.Resource().CopyTo(prs.Resource())
			prs.SetSchemaUrl(rs.SchemaUrl())
			rs.ScopeSpans().At(j).CopyTo(prs.ScopeSpans().AppendEmpty())
			out = append(out, part)
		}
	}
	return out
}

// JSONLines is the collector file exporter's JSON output: one compact
// OTLP/JSON object per batch, one per line.
func JSONLines(batches []ptrace.Traces) []byte {
	var buf bytes.Buffer
	for _, b := range batches {
		buf.Write(JSON(b))
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// Frame writes payloads in the file exporter's framed layout: each a 4-byte
// big-endian length and the payload.
func Frame(payloads ...[]byte) []byte {
	var buf bytes.Buffer
	for _, p := range payloads {
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(p)))
		buf.Write(hdr[:])
		buf.Write(p)
	}
	return buf.Bytes()
}

// Zstd compresses b into one zstd frame.
func Zstd(b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		panic(err)
	}
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// Gzip compresses b.
func Gzip(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// Quirks are the deviations from canonical OTLP/JSON that real emitters
// produce (docs/otlp-inputs.md §4b).
type Quirks struct {
	SnakeCase     bool // resource_spans, start_time_unix_nano, string_value, …
	Base64IDs     bool // IDs in base64 (Tempo, some SDKs)
	UpperHex      bool // IDs in upper-case hex
	EnumNames     bool // "SPAN_KIND_SERVER", "STATUS_CODE_ERROR"
	BareInts      bool // 64-bit integers as JSON numbers, not strings
	Legacy        bool // instrumentationLibrarySpans / instrumentationLibrary
	ValueFirst    bool // "value" before "key" in attributes
	Batches       bool // Tempo's "batches" instead of "resourceSpans"
	UnknownFields bool // fields no OTLP version defines, to be ignored
}

// Quirky rewrites canonical OTLP/JSON (as JSON writes it) with the quirks.
func Quirky(canonical []byte, q Quirks) []byte {
	n, err := parseOrdered(canonical)
	if err != nil {
		panic(err)
	}
	n.quirk(q, "")
	var buf bytes.Buffer
	n.write(&buf)
	return buf.Bytes()
}

// Tempo is td as Grafana Tempo's /api/traces/<id> returns it.
func Tempo(td ptrace.Traces) []byte {
	return Quirky(JSON(td), Quirks{Batches: true, Base64IDs: true})
}

// onode is a JSON value that keeps its object keys in order (encoding/json's
// maps would sort them), so that rewritten documents stay realistic.
type onode struct {
	kind byte // '{', '[', or 0 for a scalar whose text is raw
	keys []string
	vals []*onode
	raw  string
}

func parseOrdered(b []byte) (*onode, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return parseValue(dec)
}

func parseValue(dec *json.Decoder) (*onode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &onode{kind: byte(v)}
		for dec.More() {
			if n.kind == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			c, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, c)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return n, nil
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		return &onode{raw: string(raw)}, nil
	}
}

func (n *onode) write(w *bytes.Buffer) {
	switch n.kind {
	case '{':
		w.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				w.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			w.Write(kb)
			w.WriteByte(':')
			n.vals[i].write(w)
		}
		w.WriteByte('}')
	case '[':
		w.WriteByte('[')
		for i, v := range n.vals {
			if i > 0 {
				w.WriteByte(',')
			}
			v.write(w)
		}
		w.WriteByte(']')
	default:
		w.WriteString(n.raw)
	}
}

func (n *onode) str() string {
	var s string
	if err := json.Unmarshal([]byte(n.raw), &s); err != nil {
		return ""
	}
	return s
}

var kindNames = []string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}
var statusNames = []string{"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"}

func (n *onode) quirk(q Quirks, parent string) {
	for _, c := range n.vals {
		if n.kind == '[' {
			c.quirk(q, parent)
		}
	}
	if n.kind != '{' {
		return
	}
	for i, k := range n.keys {
		v := n.vals[i]
		switch k {
		case "traceId", "spanId", "parentSpanId":
			id, err := hex.DecodeString(v.str())
			if err == nil && len(id) > 0 {
				switch {
				case q.Base64IDs:
					v.raw = fmt.Sprintf("%q", base64.StdEncoding.EncodeToString(id))
				case q.UpperHex:
					v.raw = fmt.Sprintf("%q", strings.ToUpper(hex.EncodeToString(id)))
				}
			}
		case "kind":
			var x int
			if q.EnumNames && json.Unmarshal([]byte(v.raw), &x) == nil && x >= 0 && x < len(kindNames) {
				v.raw = fmt.Sprintf("%q", kindNames[x])
			}
		case "code":
			var x int
			if q.EnumNames && parent == "status" && json.Unmarshal([]byte(v.raw), &x) == nil && x >= 0 && x < len(statusNames) {
				v.raw = fmt.Sprintf("%q", statusNames[x])
			}
		case "startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "intValue":
			if q.BareInts && strings.HasPrefix(v.raw, `"`) {
				v.raw = v.str()
			}
		}
		v.quirk(q, k)
	}
	for i, k := range n.keys {
		switch {
		case q.Batches && k == "resourceSpans":
			k = "batches"
		case q.Legacy && k == "scopeSpans":
			k = "instrumentationLibrarySpans"
		case q.Legacy && k == "scope":
			k = "instrumentationLibrary"
		}
		if q.SnakeCase {
			k = snake(k)
		}
		n.keys[i] = k
	}
	if q.ValueFirst && len(n.keys) == 2 && n.keys[0] == "key" && n.keys[1] == "value" {
		n.keys[0], n.keys[1] = n.keys[1], n.keys[0]
		n.vals[0], n.vals[1] = n.vals[1], n.vals[0]
	}
	if q.UnknownFields {
		n.keys = append(n.keys, "x_vendor_extension")
		n.vals = append(n.vals, &onode{kind: '{', keys: []string{"nested"}, vals: []*onode{{kind: '[', vals: []*onode{{raw: `"a\"b"`}, {raw: "1.5e3"}, {raw: "null"}}}}})
	}
}

func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ReadAll is io.ReadAll for tests that have no error to report.
func ReadAll(r io.Reader) []byte {
	b, err := io.ReadAll(r)
	if err != nil {
		panic(err)
	}
	return b
}
