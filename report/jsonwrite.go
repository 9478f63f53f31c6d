package report

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/ingest"
)

// The analysis report's JSON is written by hand: encoding/json's Encoder
// with an indent reflects over every value, re-validates and compacts what
// each MarshalJSON returns, then indents the whole document in a second
// pass, and the report's samples (compare.Run: a few numbers per request
// and per output-token bucket) make that document grow with the run (tens
// of MB for a busy one). jsonWriter appends the indented text directly,
// byte for byte what that Encoder (SetIndent("", "  "), SetEscapeHTML(false))
// writes: TestWriteJSONMatchesEncoder checks it on the goldens and on
// randomized reports, and TestWriteJSONCoversEveryField that every field of
// the types written here is handled.
//
// Only the parts whose size grows with the input, and the structs around
// them, are written field by field: the report itself, its sources,
// findings, warnings, requests (with every group's summary) and stages, and
// the samples. The sections bounded by the number of devices, tenants,
// models or clocks (alignment, GPU, tokens, tenants, infrastructure, the
// registered analyses, …) go through encoding/json (jsonWriter.value), so
// their types need no code here.

// jsonWriter appends indented JSON to b. The first error (a NaN or infinity
// in a plain float64, which encoding/json refuses too) sticks.
type jsonWriter struct {
	b []byte
	// out receives b whenever it holds jsonChunk bytes or more (flush), so
	// that a large report is never whole in memory: its samples are most of
	// it, megabytes for a run of many requests.
	out   io.Writer
	depth int
	// open has one entry per open object or array: whether it has no
	// member yet.
	open []bool
	err  error
	// scratch and its encoders serve value and the strings that need
	// escaping.
	scratch bytes.Buffer
	enc     *json.Encoder
	encHTML *json.Encoder
	indent  bytes.Buffer
}

func newJSONWriter() *jsonWriter {
	w := &jsonWriter{}
	w.enc = json.NewEncoder(&w.scratch)
	w.enc.SetEscapeHTML(false)
	w.encHTML = json.NewEncoder(&w.scratch)
	return w
}

// newlineIndent is a newline and the indentation of the first levels.
var newlineIndent = "\n" + strings.Repeat("  ", 16)

func (w *jsonWriter) newline() {
	if n := 1 + 2*w.depth; n <= len(newlineIndent) {
		w.b = append(w.b, newlineIndent[:n]...)
		return
	}
	w.b = append(w.b, '\n')
	for range w.depth {
		w.b = append(w.b, "  "...)
	}
}

// jsonChunk is how many bytes the writer gathers before handing them on.
const jsonChunk = 64 << 10

// flush hands b on once it holds jsonChunk bytes. Nothing reads b back
// beyond what the caller appended since its last call of next, so b may be
// emptied there and between a series' elements.
func (w *jsonWriter) flush() {
	if len(w.b) < jsonChunk || w.err != nil {
		return
	}
	if _, err := w.out.Write(w.b); err != nil {
		w.fail(err)
	}
	w.b = w.b[:0]
}

// next starts the next member of the innermost object or array.
func (w *jsonWriter) next() {
	w.flush()
	top := len(w.open) - 1
	if !w.open[top] {
		w.b = append(w.b, ',')
	}
	w.open[top] = false
	w.newline()
}

func (w *jsonWriter) begin(c byte) {
	w.b = append(w.b, c)
	w.depth++
	w.open = append(w.open, true)
}

func (w *jsonWriter) end(c byte) {
	w.depth--
	top := len(w.open) - 1
	if !w.open[top] {
		w.newline()
	}
	w.open = w.open[:top]
	w.b = append(w.b, c)
}

func (w *jsonWriter) beginObject() { w.begin('{') }
func (w *jsonWriter) endObject()   { w.end('}') }
func (w *jsonWriter) beginArray()  { w.begin('[') }
func (w *jsonWriter) endArray()    { w.end(']') }

// key starts an object member; k is a field name that needs no escaping.
func (w *jsonWriter) key(k string) {
	w.next()
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, `": `...)
}

// mapKey starts an object member named by a map key (escaped as a string).
func (w *jsonWriter) mapKey(k string, html bool) {
	w.next()
	w.str(k, html)
	w.b = append(w.b, ": "...)
}

// str writes s as a JSON string. html escapes <, > and & as \u003c, …:
// json.Marshal does, and the samples' MarshalJSON goes through it.
func (w *jsonWriter) str(s string, html bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || html && (c == '<' || c == '>' || c == '&') {
			w.escaped(s, html)
			return
		}
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, s...)
	w.b = append(w.b, '"')
}

// escaped writes a string with characters to escape through encoding/json,
// so that its rules (invalid UTF-8, U+2028, \b, …) are the same by
// construction.
func (w *jsonWriter) escaped(s string, html bool) {
	w.scratch.Reset()
	enc := w.enc
	if html {
		enc = w.encHTML
	}
	if err := enc.Encode(s); err != nil {
		w.fail(err)
		return
	}
	w.b = append(w.b, bytes.TrimSuffix(w.scratch.Bytes(), []byte("\n"))...)
}

// strField, intField and floatField write a member; with omitEmpty a zero
// value is left out, as the field's omitempty tag says.
func (w *jsonWriter) strField(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	w.key(k)
	w.str(v, false)
}

func (w *jsonWriter) intField(k string, v int64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	w.key(k)
	w.int(v)
}

func (w *jsonWriter) floatField(k string, v float64) {
	w.key(k)
	w.float(v)
}

func (w *jsonWriter) int(v int64) {
	if v >= 0 {
		w.b = appendUint(w.b, uint64(v)) // the samples' counts
		return
	}
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *jsonWriter) bool(v bool) { w.b = strconv.AppendBool(w.b, v) }

func (w *jsonWriter) null() { w.b = append(w.b, "null"...) }

// float writes v as encoding/json writes a float64 (its floatEncoder):
// shortest digits, exponent form below 1e-6 and from 1e21, "e-07" as
// "e-7"; NaN and infinities are an error.
func (w *jsonWriter) float(v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		w.fail(&json.UnsupportedValueError{Str: strconv.FormatFloat(v, 'g', -1, 64)})
		w.null()
		return
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	w.b = strconv.AppendFloat(w.b, v, format, -1, 64)
	if format == 'e' {
		if n := len(w.b); n >= 4 && w.b[n-4] == 'e' && w.b[n-3] == '-' && w.b[n-2] == '0' {
			w.b[n-2] = w.b[n-1]
			w.b = w.b[:n-1]
		}
	}
}

func (w *jsonWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// value writes v through encoding/json, indented in place.
func (w *jsonWriter) value(v any) {
	w.scratch.Reset()
	if err := w.enc.Encode(v); err != nil {
		w.fail(err)
		w.null()
		return
	}
	w.indented(bytes.TrimSuffix(w.scratch.Bytes(), []byte("\n")))
}

// indented writes compact JSON indented at the current depth.
func (w *jsonWriter) indented(compact []byte) {
	w.indent.Reset()
	if err := json.Indent(&w.indent, compact, strings.Repeat("  ", w.depth), "  "); err != nil {
		w.fail(err)
		w.null()
		return
	}
	w.b = append(w.b, w.indent.Bytes()...)
}

// WriteJSON writes the report as indented JSON with "schema":
// "llmprof.report/v1". Unknown metrics are null, never 0. It writes w in
// chunks as it goes (jsonChunk), so on an error (a NaN where the schema has
// no null) what came before it has been written: `-o FILE` is replaced only
// on success (internal/iostreams.WriteFile).
func (r *Report) WriteJSON(w io.Writer) error {
	jw := newJSONWriter()
	jw.out = w
	jw.b = make([]byte, 0, jsonChunk+4<<10)
	jw.report(r)
	if jw.err != nil {
		return jw.err
	}
	jw.b = append(jw.b, '\n')
	_, err := w.Write(jw.b)
	return err
}

func (w *jsonWriter) report(r *Report) {
	w.beginObject()
	w.strField("schema", r.Schema, false)
	w.strField("llmprof_version", r.Version, false)
	w.strField("unrelated_inputs", r.Unrelated, true)
	w.key("headline")
	if r.Headline == nil {
		w.null()
	} else {
		w.beginArray()
		for _, f := range r.Headline {
			w.next()
			w.beginObject()
			w.strField("kind", string(f.Kind), false)
			w.strField("text", f.Text, false)
			w.strField("section", f.Section, false)
			w.endObject()
		}
		w.endArray()
	}
	w.key("sources")
	if r.Sources == nil {
		w.null()
	} else {
		w.beginArray()
		for _, s := range r.Sources {
			w.next()
			w.source(s)
		}
		w.endArray()
	}
	w.key("alignment")
	w.value(r.Alignment)
	if r.Causality != nil {
		w.key("causality")
		w.value(r.Causality)
	}
	w.key("requests")
	w.requests(r.Requests)
	w.key("stages")
	if r.Stages == nil {
		w.null()
	} else {
		w.beginArray()
		for _, s := range r.Stages {
			w.next()
			w.beginObject()
			w.strField("name", s.Name, false)
			w.floatField("total_ms", s.TotalMs)
			w.floatField("share", s.Share)
			w.endObject()
		}
		w.endArray()
	}
	if r.BlindSpots != nil {
		w.key("blind_spots")
		w.value(r.BlindSpots)
	}
	if r.KVCache != nil {
		w.key("kv_cache")
		w.value(r.KVCache)
	}
	if len(r.ModelEvents) > 0 {
		w.key("model_events")
		w.value(r.ModelEvents)
	}
	if r.Tokens != nil {
		w.key("tokens")
		w.value(r.Tokens)
	}
	if r.GPU != nil {
		w.key("gpu")
		w.value(r.GPU)
	}
	if r.GPUCoverage != nil {
		w.key("gpu_coverage")
		w.value(r.GPUCoverage)
	}
	if r.Tenants != nil {
		w.key("tenants")
		w.value(r.Tenants)
	}
	w.strField("tenants_note", r.TenantsNote, true)
	if r.Infrastructure != nil {
		w.key("infrastructure")
		w.value(r.Infrastructure)
	}
	if len(r.Analyses) > 0 {
		w.key("analyses")
		w.value(r.Analyses)
	}
	w.key("warnings")
	w.warnings(r.Warnings)
	if r.Samples != nil {
		w.key("samples")
		w.samples(r.Samples, nil)
	} else if r.columns != nil {
		w.key("samples")
		w.samples(&r.columns.Run, r.columns)
	}
	w.endObject()
}

func (w *jsonWriter) source(s Source) {
	w.beginObject()
	w.strField("path", s.Path, false)
	w.strField("format", s.Format, false)
	w.strField("producer", s.Producer, true)
	w.intField("spans", int64(s.Spans), false)
	w.intField("gpu_ops", int64(s.GPUOps), false)
	w.intField("samples", int64(s.Samples), false)
	w.intField("warnings", int64(s.Warnings), false)
	w.endObject()
}

func (w *jsonWriter) warnings(ws []ingest.Warning) {
	if ws == nil {
		w.null()
		return
	}
	w.beginArray()
	for _, x := range ws {
		w.next()
		w.beginObject()
		w.strField("path", x.Path, true)
		w.strField("pos", x.Pos, true)
		w.strField("code", x.Code, false)
		w.strField("message", x.Msg, false)
		w.intField("more", int64(x.More), true)
		w.endObject()
	}
	w.endArray()
}

func (w *jsonWriter) requests(q *Requests) {
	if q == nil {
		w.null()
		return
	}
	w.beginObject()
	w.summaryFields(&q.Summary)
	w.key("conventions")
	if q.Styles == nil {
		w.null()
	} else {
		w.beginObject()
		for _, k := range slices.Sorted(maps.Keys(q.Styles)) {
			w.mapKey(k, false)
			w.int(int64(q.Styles[k]))
		}
		w.endObject()
	}
	for _, g := range []struct {
		key string
		m   map[string]attribution.Summary
	}{{"by_tenant", q.ByTenant}, {"by_model", q.ByModel}} {
		w.key(g.key)
		if g.m == nil {
			w.null()
			continue
		}
		w.beginObject()
		for _, k := range slices.Sorted(maps.Keys(g.m)) {
			w.mapKey(k, false)
			s := g.m[k]
			w.beginObject()
			w.summaryFields(&s)
			w.endObject()
		}
		w.endObject()
	}
	w.key("slo")
	w.value(q.SLO)
	if q.E2ESource != nil {
		w.key("e2e_source")
		w.value(q.E2ESource)
	}
	w.endObject()
}

// summaryFields writes a summary's members into the open object (Requests
// embeds one).
func (w *jsonWriter) summaryFields(s *attribution.Summary) {
	w.intField("count", int64(s.Requests), false)
	w.key("metrics")
	w.beginObject()
	for _, d := range []struct {
		key string
		d   *attribution.Distribution
	}{{"ttft", &s.Metrics.TTFT}, {"tpot", &s.Metrics.TPOT}, {"itl", &s.Metrics.ITL}, {"e2e", &s.Metrics.E2E}, {"queue", &s.Metrics.Queue}} {
		w.key(d.key)
		b, err := d.d.MarshalJSON()
		if err != nil {
			w.fail(err)
		}
		w.indented(b)
	}
	w.endObject()
	w.floatField("duration_s", s.Duration)
	w.intField("input_tokens", s.InputTokens, false)
	w.intField("output_tokens", s.OutputTokens, false)
	w.floatField("output_tokens_per_s", s.Throughput)
	if s.Goodput != nil {
		w.key("goodput")
		w.value(s.Goodput)
	}
}

// samples writes what compare.Run.MarshalJSON writes, indented: its schema
// marker first, and strings escaped for HTML as json.Marshal does. With c,
// r is c.Run and the series are c's columns, written as the series
// compare.FromAttribution would have made (TestColumnsWriteTheirRun).
func (w *jsonWriter) samples(r *compare.Run, c *compare.Columns) {
	w.beginObject()
	w.key("schema")
	w.str(compare.SamplesSchema, true)
	if r.RunID != "" {
		w.key("run_id")
		w.str(r.RunID, true)
	}
	if len(r.Models) > 0 {
		w.key("models")
		w.beginArray()
		for _, m := range r.Models {
			w.next()
			w.str(m, true)
		}
		w.endArray()
	}
	w.floatField("duration_ms", r.DurationMS)
	w.intField("requests", int64(r.Requests), false)
	w.intField("completed", int64(r.Completed), false)
	if r.SLO != "" {
		w.key("slo")
		w.str(r.SLO, true)
	}
	w.intField("good", int64(r.Good), true)
	if c != nil {
		w.columnFields(c)
	} else {
		w.seriesFields(r)
	}
	if r.TokensEstimated {
		w.key("tokens_estimated")
		w.bool(true)
	}
	w.endObject()
}

// seriesFields writes a Run's series, from ttft_ms to tenants_ms.
func (w *jsonWriter) seriesFields(r *compare.Run) {
	for _, s := range []struct {
		key string
		s   compare.Series
	}{
		{"ttft_ms", r.TTFT}, {"tpot_ms", r.TPOT}, {"e2e_ms", r.E2E}, {"queue_ms", r.Queue},
		{"output_tokens", r.OutputTokens}, {"input_tokens", r.InputTokens}, {"arrival_ms", r.ArrivalMS}, {"itl_ms", r.ITL},
	} {
		if len(s.s) > 0 {
			w.key(s.key)
			w.series(s.s)
		}
	}
	if len(r.ITLCounts) > 0 {
		w.key("itl_counts")
		w.beginArray()
		for _, n := range r.ITLCounts {
			w.next()
			w.int(int64(n))
		}
		w.endArray()
	}
	for _, m := range []struct {
		key       string
		m         map[string]compare.Series
		omitEmpty bool
	}{{"stages_ms", r.Stages, true}, {"tokens_ms", r.Tokens, true}, {"first_token_ms", r.FirstToken, true}, {"tenants_ms", r.Tenants, false}} {
		if m.omitEmpty && len(m.m) == 0 {
			continue
		}
		w.key(m.key)
		if m.m == nil {
			w.null()
			continue
		}
		w.beginObject()
		for _, k := range slices.Sorted(maps.Keys(m.m)) {
			w.mapKey(k, true)
			w.series(m.m[k])
		}
		w.endObject()
	}
}

// columnFields writes what seriesFields writes of the Run c stands for:
// the series in the same order (Columns keeps Run's, and its maps' in key
// order), the maps left out when empty, tenants_ms null.
func (w *jsonWriter) columnFields(c *compare.Columns) {
	for i := range c.Series {
		w.key(c.Series[i].Name)
		w.column(&c.Series[i])
	}
	for _, m := range []struct {
		key string
		m   []compare.Column
	}{{"stages_ms", c.Stages}, {"tokens_ms", c.Tokens}, {"first_token_ms", c.FirstToken}} {
		if len(m.m) == 0 {
			continue
		}
		w.key(m.key)
		w.beginObject()
		for i := range m.m {
			w.mapKey(m.m[i].Name, true)
			w.column(&m.m[i])
		}
		w.endObject()
	}
	w.key("tenants_ms")
	w.null()
}

// series writes what compare.Series.MarshalJSON writes, indented: shortest
// 'g' digits, null for NaN and infinities.
func (w *jsonWriter) series(s compare.Series) {
	if s == nil {
		w.null()
		return
	}
	w.values(s, 1)
}

// column writes a column as series writes the Series it stands for
// (TestColumnsWriteTheirRun checks the samples against FromAttribution's).
func (w *jsonWriter) column(c *compare.Column) { w.values(c.Raw, c.Scale) }

// values writes an array of raw/scale for each raw value, as series writes
// them: a whole number of nanoseconds (scale 1e6) without the division
// (appendNanosAsMs), a whole count (scale 1) as an integer (appendCount;
// any other value there is appendShortestG's).
func (w *jsonWriter) values(raw []float64, scale float64) {
	w.beginArray()
	if len(raw) > 0 {
		w.next()
		// What goes before every element after the first: a comma, the
		// newline and the indentation next wrote. The elements are
		// appended to a local slice, handed back to w at each flush
		// (series hold most of a large report's numbers).
		var sepBuf [40]byte
		sep := append(append(sepBuf[:0], ','), w.b[len(w.b)-(1+2*w.depth):]...)
		// A separator of 16 bytes at most (depth 7, the series' own array
		// counted: the report's samples are at 4) is written as one
		// 16-byte store into room made beforehand, not copied by append's
		// call of memmove (a tenth of the loop).
		var sep16 [16]byte
		short := len(sep) <= len(sep16)
		copy(sep16[:], sep)
		b := w.b
		for i, x := range raw {
			switch {
			case i == 0:
			case short:
				if cap(b)-len(b) < len(sep16) {
					b = slices.Grow(b, len(sep16))
				}
				at := len(b)
				*(*[16]byte)(b[at : at+16]) = sep16
				b = b[:at+len(sep)]
			default:
				b = append(b, sep...)
			}
			// Told apart by their bits: +0 is all zeros, NaN and the
			// infinities have every exponent bit set.
			switch u := math.Float64bits(x); {
			case u == 0:
				b = append(b, '0')
			case u&expBits == expBits:
				b = append(b, "null"...)
			case scale == 1e6:
				b = appendNanosAsMs(b, x)
			case scale == 1:
				b = appendCount(b, x)
			default:
				b = appendShortestG(b, x/scale)
			}
			if len(b) >= jsonChunk {
				w.b = b
				w.flush()
				b = w.b
			}
		}
		w.b = b
	}
	w.endArray()
}

// expBits are a float64's exponent bits.
const expBits = 0x7ff << 52

// appendNanosAsMs appends what appendShortestG(b, x/1e6) does, for x a
// count of nanoseconds. Where x is a whole number under 2⁵³ in magnitude,
// float64(x) is x and x/1e6 the double nearest the decimal x/10⁶ (IEEE
// division is correctly rounded), whose shortest digits are x's: any other
// decimal of as few significant digits is a multiple of 10⁻⁶ too, so at
// least 10⁻⁶ away, where the doubles that round to x/1e6 lie within 2⁻³³
// of it (below 10⁶). So for 100 ≤ |x| < 10¹² (10⁻⁴ ≤ x/1e6 < 10⁶, 'g'
// writes no exponent) they are the integer's digits with the point six
// from the right, trailing zeros dropped (appendMicros), and under 100 ns
// one or two digits and e-06 or e-05 (appendFewNanos): no division and no
// check. +0 is "0". Anything else (−0, a fraction, NaN, …) goes to
// appendShortestG. TestAppendNanosAsMs checks it against strconv.
func appendNanosAsMs(b []byte, x float64) []byte {
	n := int64(x)
	sign := n >> 63 // −1 when negative, else 0
	if m := uint64((n ^ sign) - sign); float64(n) == x && m < 1e12 {
		switch {
		case m >= 100:
			return appendMicros(b, n)
		case m > 0:
			return appendFewNanos(b, n)
		case math.Float64bits(x) == 0:
			return append(b, '0')
		}
	}
	return appendShortestG(b, x/1e6)
}

// appendFewNanos appends strconv's shortest 'g' of n/1e6 for 0 < |n| < 100:
// "1e-06", "-5e-06", "1.2e-05", "9e-05".
func appendFewNanos(b []byte, n int64) []byte {
	if n < 0 {
		b = append(b, '-')
		n = -n
	}
	if n < 10 {
		return append(b, byte('0'+n), 'e', '-', '0', '6')
	}
	b = append(b, byte('0'+n/10))
	if d := n % 10; d != 0 {
		b = append(b, '.', byte('0'+d))
	}
	return append(b, "e-05"...)
}

// appendCount appends what appendShortestG(b, x) does, a whole count
// from 0 (+0) to 999,999 as its digits ('g' writes an exponent from 10⁶
// on).
func appendCount(b []byte, x float64) []byte {
	if n := int64(x); float64(n) == x && n >= 0 && n < 1e6 && (n > 0 || math.Float64bits(x) == 0) {
		// Its six digits, in one 8-byte store, leading zeros shifted
		// out (all but the last digit's), as in appendMicros.
		if cap(b)-len(b) < 8 {
			b = slices.Grow(b, 8)
		}
		at := len(b)
		d := sixDigits(uint32(n))
		lead := min(bits.TrailingZeros64(d^sixZeros)/8, 5)
		binary.LittleEndian.PutUint64(b[at:at+8], d>>(8*lead))
		return b[:at+6-lead]
	}
	return appendShortestG(b, x)
}

// appendShortestG appends strconv.AppendFloat(b, v, 'g', -1, 64), the same
// bytes, faster for the samples' usual values: milliseconds to the
// nanosecond and whole counts. When v is the double nearest n/10⁶ for an
// integer n and 10⁻⁴ ≤ |v| < 10⁶, that decimal, trailing zeros dropped, is
// v's shortest representation ('g' writes it without an exponent there):
// any other decimal as short differs from it by at least 10⁻⁶, far more than
// the width of the interval that rounds to v (under 2.4·10⁻¹⁰ below 10⁶).
// Any other v there (TPOT's quotients) is appendShortestFixed's, and v
// outside it strconv's. TestAppendShortestG checks it against strconv.
func appendShortestG(b []byte, v float64) []byte {
	if v == 0 && !math.Signbit(v) { // the samples' most common value
		return append(b, '0')
	}
	a := math.Abs(v)
	if !(a >= 1e-4 && a < 1e6) {
		return strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	// n is |v|·10⁶ rounded half up (a conversion, not math.Round's bit
	// work); the check decides, whatever the rounding of a tie. n < 10¹²:
	// int64, whose conversions to and from float64 are one instruction
	// each (uint64's test the top bit first, a third of this function's
	// time).
	n := int64(a*1e6 + 0.5)
	if float64(n)/1e6 != a {
		return appendShortestFixed(b, v)
	}
	if v < 0 {
		n = -n
	}
	return appendMicros(b, n)
}

// appendMicros appends n/10⁶ for |n| < 10¹², its trailing zeros dropped,
// as strconv's shortest 'g' writes the double nearest it for 0 and
// 10² ≤ |n| (see appendShortestG): sign, integer part, and the decimals
// that are not zero.
func appendMicros(b []byte, n int64) []byte {
	// At most 14 bytes: a sign, six integer digits, a point and six
	// decimals; written in place, each six digits in one 8-byte store (16
	// bytes of room: the stores run past the digits kept).
	if cap(b)-len(b) < 16 {
		b = slices.Grow(b, 16)
	}
	at := len(b)
	out := b[at : at+16]
	k := 0
	if n < 0 {
		out[0] = '-'
		k = 1
		n = -n
	}
	u, frac := uint32(uint64(n)/1e6), uint32(uint64(n)%1e6)
	// The integer part's six digits, its leading zeros shifted out (all
	// but the last digit's: 0.5 is "0.5").
	ip := sixDigits(u)
	lead := min(bits.TrailingZeros64(ip^sixZeros)/8, 5)
	binary.LittleEndian.PutUint64(out[k:], ip>>(8*lead))
	k += 6 - lead
	if frac != 0 {
		// The six decimals, trailing zeros dropped (frac ≠ 0 keeps one).
		fp := sixDigits(frac)
		out[k] = '.'
		binary.LittleEndian.PutUint64(out[k+1:], fp)
		k += 7 - bits.LeadingZeros64((fp^sixZeros)<<16)/8
	}
	return b[:at+k]
}

// sixDigits is x < 10⁶ as six decimal digits, leading zeros included, in
// the low six bytes of a little-endian word: the first digit in the lowest
// byte, as an 8-byte store writes them in order.
func sixDigits(x uint32) uint64 {
	return uint64(digitPairs16[x/1e4%100]) | uint64(digitQuads[x%1e4])<<16
}

// digitQuads are 0 to 9999 as four digits in a little-endian word.
var digitQuads = func() (t [10000]uint32) {
	for q := range t {
		t[q] = uint32(digitPairs16[q/100]) | uint32(digitPairs16[q%100])<<16
	}
	return t
}()

// sixZeros is sixDigits(0): "000000".
const sixZeros = 0x303030303030

// digitPairs16 is digitPairs as little-endian 16-bit words: the pair of
// p, its tens digit in the low byte.
var digitPairs16 = func() (t [100]uint16) {
	for p := range t {
		t[p] = uint16(digitPairs[2*p]) | uint16(digitPairs[2*p+1])<<8
	}
	return t
}()

// digitPairs holds "00" to "99", for writing two decimal digits at once.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendUint is strconv.AppendUint(b, u, 10) for the samples' counts,
// without strconv's general path.
func appendUint(b []byte, u uint64) []byte {
	var buf [20]byte
	i := len(buf)
	for u >= 100 {
		r := u % 100
		u /= 100
		i -= 2
		buf[i], buf[i+1] = digitPairs[2*r], digitPairs[2*r+1]
	}
	if u >= 10 {
		i -= 2
		buf[i], buf[i+1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		i--
		buf[i] = byte('0' + u)
	}
	return append(b, buf[i:]...)
}
