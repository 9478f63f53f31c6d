package align

import (
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// keyKind says which identifier ties an NVTX range to the OTLP span it
// mirrors (DESIGN §5).
type keyKind uint8

const (
	keyNone    keyKind = iota
	keySpanID          // span_id=<16 hex> ↔ the OTLP span ID
	keyRequest         // request_id=<id> ↔ llm.request.id / gen_ai.request.id
	keyStep            // step=<n> ↔ llm.step.id
)

// mirrorKey is what an NVTX range's text says it mirrors.
type mirrorKey struct {
	kind keyKind
	span ingest.SpanID
	id   string
}

// parseMirrorKey reads the mirror key from an NVTX range's text. A span ID
// wins over a request ID, which wins over a step number, because it is the
// most specific. The text may carry other words ("prefill span_id=00f0…
// tenant=a"); keys end at a space or one of , ; | ) ] } " '.
func parseMirrorKey(text string) mirrorKey {
	if v, ok := keyValue(text, "span_id="); ok && len(v) == 16 {
		var id ingest.SpanID
		if decodeHex(id[:], v) && !id.IsZero() {
			return mirrorKey{kind: keySpanID, span: id}
		}
	}
	if v, ok := keyValue(text, "request_id="); ok && v != "" {
		return mirrorKey{kind: keyRequest, id: v}
	}
	if v, ok := keyValue(text, "step="); ok && v != "" && isDigits(v) {
		return mirrorKey{kind: keyStep, id: normalizeStep(v)}
	}
	return mirrorKey{}
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

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// normalizeStep drops leading zeros from a decimal step number so that
// "step=007" matches llm.step.id 7; anything else is compared as is.
func normalizeStep(v string) string {
	if v == "" || !isDigits(v) {
		return v
	}
	if t := strings.TrimLeft(v, "0"); t != "" {
		return t
	}
	return "0"
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

// The OTLP attributes that carry the IDs NVTX text may name.
var (
	requestIDKeys = []string{"llm.request.id", "gen_ai.request.id"}
	stepIDKeys    = []string{"llm.step.id"}
	// Preferred span names when several spans carry the same request or
	// step ID (stage spans often repeat the request's ID).
	requestSpanNames = []string{"llm.request", "llm_request"}
	stepSpanNames    = []string{"llm.step"}
)

// spanKeyValue returns the span's value for one of the attribute keys, as a
// string (an integer ID is formatted in decimal).
func spanKeyValue(t *ingest.Trace, s *ingest.Span, keys []ingest.StrID) (string, bool) {
	for _, k := range keys {
		v, ok := ingest.Get(s.Attrs, k)
		if !ok {
			continue
		}
		switch v.Kind() {
		case ingest.KindString:
			return t.Str(v.Str()), true
		case ingest.KindInt:
			return t.FormatValue(v), true
		case ingest.KindDouble:
			if f := v.Double(); f == float64(int64(f)) {
				return t.FormatValue(ingest.IntValue(int64(f))), true
			}
		}
	}
	return "", false
}
