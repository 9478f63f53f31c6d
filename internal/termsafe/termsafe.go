// Package termsafe keeps what an input names from steering the terminal that
// llmprof prints to. Kernel, tenant, model and file names come from captures
// someone else made; written raw, an OSC sequence in one retitles the window,
// a CSI sequence clears the screen or moves the cursor, a carriage return
// overwrites a printed line. The commands wrap their standard streams in a
// Writer when they are terminals; the report's own styling passes.
package termsafe

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// Writer writes through to W with every control character made visible:
// C0 controls other than newline and tab, DEL and the C1 controls
// (U+0080–U+009F, which some terminals obey like ESC [) become \xNN or
// \u00NN. An escape sequence passes only when it is a select-graphic-
// rendition sequence (ESC [ params m): lipgloss's colours. A name's colour
// codes pass too, and can at most recolour text; nothing else gets through.
type Writer struct {
	W io.Writer
	// pending holds the start of a sequence split across writes.
	pending []byte
	out     []byte
}

// New wraps w.
func New(w io.Writer) *Writer { return &Writer{W: w} }

// maxSGR bounds a colour sequence; a longer run of parameters is escaped.
const maxSGR = 64

// Write escapes p (see Writer) and writes it; it reports len(p) on success.
func (t *Writer) Write(p []byte) (int, error) {
	buf := p
	if len(t.pending) > 0 {
		buf = append(t.pending, p...)
		t.pending = nil
	}
	t.out = t.out[:0]
	for i := 0; i < len(buf); {
		c := buf[i]
		switch {
		case c == '\n' || c == '\t' || c >= 0x20 && c < 0x7f:
			t.out = append(t.out, c)
			i++
		case c == 0x1b:
			n, complete := sgrLen(buf[i:])
			if !complete {
				t.pending = append([]byte(nil), buf[i:]...)
				i = len(buf)
				continue
			}
			if n > 0 {
				t.out = append(t.out, buf[i:i+n]...)
				i += n
				continue
			}
			t.out = fmt.Appendf(t.out, `\x%02x`, c)
			i++
		case c < 0x80:
			t.out = fmt.Appendf(t.out, `\x%02x`, c)
			i++
		default:
			if !utf8.FullRune(buf[i:]) {
				t.pending = append([]byte(nil), buf[i:]...)
				i = len(buf)
				continue
			}
			r, size := utf8.DecodeRune(buf[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				t.out = fmt.Appendf(t.out, `\x%02x`, c)
			case r >= 0x80 && r <= 0x9f:
				t.out = fmt.Appendf(t.out, `\u%04x`, r)
			default:
				t.out = append(t.out, buf[i:i+size]...)
			}
			i += size
		}
	}
	if _, err := t.W.Write(t.out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a sequence left incomplete at the end, escaped.
func (t *Writer) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	rest := t.pending
	t.pending = nil
	t.out = t.out[:0]
	for _, c := range rest {
		if c >= 0x20 && c < 0x7f {
			t.out = append(t.out, c)
		} else {
			t.out = fmt.Appendf(t.out, `\x%02x`, c)
		}
	}
	_, err := t.W.Write(t.out)
	return err
}

// sgrLen is the length of the SGR sequence at the start of b (ESC [ digits,
// ';' or ':' ... m), 0 when b starts with something else; complete is false
// when b ends before that can be told.
func sgrLen(b []byte) (n int, complete bool) {
	if len(b) < 2 {
		return 0, false
	}
	if b[1] != '[' {
		return 0, true
	}
	for i := 2; i < len(b); i++ {
		switch c := b[i]; {
		case c == 'm':
			return i + 1, true
		case c >= '0' && c <= '9' || c == ';' || c == ':':
			if i >= maxSGR {
				return 0, true
			}
		default:
			return 0, true
		}
	}
	return 0, len(b) > maxSGR
}
