package ingest

import (
	"strconv"
	"strings"
)

// MirrorKind says which identifier ties an NVTX-like range (an nsys NVTX
// push/pop range, a PyTorch profiler user annotation) to the OTLP span it
// mirrors. The mirror convention is documented in docs/align.md.
type MirrorKind uint8

const (
	MirrorNone    MirrorKind = iota
	MirrorSpanID             // span_id=<16 hex> ↔ the OTLP span ID
	MirrorRequest            // request_id=<id> ↔ llm.request.id / gen_ai.request.id
	MirrorStep               // step=<n> ↔ llm.step.id
)

// Mirror is what a range's text says it mirrors.
type Mirror struct {
	Kind MirrorKind
	// Span is set for MirrorSpanID.
	Span SpanID
	// ID is the request ID (MirrorRequest) or the decimal step number with
	// leading zeros dropped (MirrorStep).
	ID string
}

// Step returns the step number of a MirrorStep key.
func (m Mirror) Step() (int64, bool) {
	if m.Kind != MirrorStep {
		return 0, false
	}
	n, err := strconv.ParseInt(m.ID, 10, 64)
	return n, err == nil
}

// ParseMirror reads the mirror key from a range's text; it is the one parser
// of that convention, used by the aligner and by the step join alike.
//
// A key starts at the beginning of the text or after a delimiter (so
// "parent_span_id=…" and "microstep=3" are not keys) and its value ends at a
// space or one of , ; : | ( ) [ ] { } " '. The text may carry other words
// ("prefill span_id=00f0… tenant=a"). A span ID is exactly 16 hex digits and
// not all zero; a step is decimal. "step <n>" at the very start of the text
// (a profiler range named after the engine step) is a step key too. A span
// ID wins over a request ID, which wins over a step, because it is the most
// specific.
func ParseMirror(text string) Mirror {
	if v, ok := keyValue(text, "span_id="); ok && len(v) == 16 {
		var id SpanID
		if decodeHex(id[:], v) && !id.IsZero() {
			return Mirror{Kind: MirrorSpanID, Span: id}
		}
	}
	if v, ok := keyValue(text, "request_id="); ok && v != "" {
		return Mirror{Kind: MirrorRequest, ID: v}
	}
	if v, ok := keyValue(text, "step="); ok && isDigits(v) {
		return Mirror{Kind: MirrorStep, ID: NormalizeStep(v)}
	}
	if rest, ok := strings.CutPrefix(text, "step "); ok {
		end := 0
		for end < len(rest) && !isDelim(rest[end]) {
			end++
		}
		if v := rest[:end]; isDigits(v) {
			return Mirror{Kind: MirrorStep, ID: NormalizeStep(v)}
		}
	}
	return Mirror{}
}

// NormalizeStep drops leading zeros from a decimal step number so that
// "step=007" matches llm.step.id 7; anything else is returned as is.
func NormalizeStep(v string) string {
	if !isDigits(v) {
		return v
	}
	if t := strings.TrimLeft(v, "0"); t != "" {
		return t
	}
	return "0"
}

// keyValue finds key at a word start in text and returns the value after it.
func keyValue(text, key string) (string, bool) {
	for from := 0; ; {
		i := strings.Index(text[from:], key)
		if i < 0 {
			return "", false
		}
		i += from
		if i == 0 || isDelim(text[i-1]) {
			v := text[i+len(key):]
			end := 0
			for end < len(v) && !isDelim(v[end]) {
				end++
			}
			return v[:end], true
		}
		from = i + len(key)
	}
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', ',', ';', '|', '(', ')', '[', ']', '{', '}', '"', '\'', ':':
		return true
	}
	return false
}

// isDigits reports whether s is a non-empty run of decimal digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := hexNibble(s[2*i])
		lo, ok2 := hexNibble(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexNibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
