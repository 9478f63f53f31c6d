package export

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// eventWriter streams a Chrome trace JSON object: the header, then one event
// per line into "traceEvents", then the closing brackets. Each event is built
// in a reused buffer and written at once, so memory stays flat however large
// the export.
type eventWriter struct {
	w      *bufio.Writer
	buf    []byte
	base   int64 // ns subtracted from every timestamp
	events int
	err    error
}

func newEventWriter(w io.Writer, base int64) *eventWriter {
	return &eventWriter{w: bufio.NewWriterSize(w, 256<<10), base: base, buf: make([]byte, 0, 1024)}
}

// begin starts an event; fields follow with the add methods; end writes it.
func (ew *eventWriter) begin(ph string) {
	ew.buf = ew.buf[:0]
	if ew.events > 0 {
		ew.buf = append(ew.buf, ",\n"...)
	}
	ew.buf = append(ew.buf, `{"ph":"`...)
	ew.buf = append(ew.buf, ph...)
	ew.buf = append(ew.buf, '"')
}

func (ew *eventWriter) end() {
	ew.buf = append(ew.buf, '}')
	ew.events++
	if ew.err == nil {
		_, ew.err = ew.w.Write(ew.buf)
	}
}

func (ew *eventWriter) str(key, v string) {
	ew.key(key)
	ew.buf = appendJSONString(ew.buf, v)
}

func (ew *eventWriter) int(key string, v int64) {
	ew.key(key)
	ew.buf = strconv.AppendInt(ew.buf, v, 10)
}

func (ew *eventWriter) boolean(key string, v bool) {
	ew.key(key)
	ew.buf = strconv.AppendBool(ew.buf, v)
}

// ts writes a timestamp as µs relative to the base with ns precision
// ("12.345"). Perfetto reads ts as a double: relative times keep the ns that
// absolute Unix µs (1.7e15) would lose.
func (ew *eventWriter) ts(key string, ns int64) {
	ew.key(key)
	ew.buf = appendMicros(ew.buf, ns-ew.base)
}

// dur writes a duration in µs with ns precision.
func (ew *eventWriter) dur(key string, ns int64) {
	ew.key(key)
	ew.buf = appendMicros(ew.buf, ns)
}

func (ew *eventWriter) key(k string) {
	ew.buf = append(ew.buf, ',', '"')
	ew.buf = append(ew.buf, k...)
	ew.buf = append(ew.buf, '"', ':')
}

// raw appends pre-encoded JSON as the value of key.
func (ew *eventWriter) raw(key string, v []byte) {
	ew.key(key)
	ew.buf = append(ew.buf, v...)
}

// appendMicros formats ns as a decimal number of µs with three decimals.
func appendMicros(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		if ns == math.MinInt64 {
			return append(b, "9223372036854775.808"...)
		}
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	frac := ns % 1000
	return append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
}

// appendJSONString appends s as a JSON string. Control characters are
// escaped, invalid UTF-8 becomes U+FFFD, and U+2028/2029 are escaped so the
// file is also valid JavaScript (chrome://tracing evaluates nothing, but
// other viewers might).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, `\u202`...)
			b = append(b, hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONFloat appends a float; NaN and infinities, which JSON cannot
// hold, become strings.
func appendJSONFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// argWriter builds an "args" object.
type argWriter struct {
	b []byte
	n int
}

func (a *argWriter) reset() { a.b, a.n = append(a.b[:0], '{'), 0 }

func (a *argWriter) key(k string) {
	if a.n > 0 {
		a.b = append(a.b, ',')
	}
	a.n++
	a.b = appendJSONString(a.b, k)
	a.b = append(a.b, ':')
}

func (a *argWriter) str(k, v string) {
	a.key(k)
	a.b = appendJSONString(a.b, v)
}

func (a *argWriter) int(k string, v int64) {
	a.key(k)
	a.b = strconv.AppendInt(a.b, v, 10)
}

func (a *argWriter) float(k string, v float64) {
	a.key(k)
	a.b = appendJSONFloat(a.b, v)
}

func (a *argWriter) boolean(k string, v bool) {
	a.key(k)
	a.b = strconv.AppendBool(a.b, v)
}

func (a *argWriter) done() []byte { return append(a.b, '}') }
