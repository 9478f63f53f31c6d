package kineto

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a pull tokenizer over a JSON text read from an io.Reader
// through a window that only grows to the longest single token (or
// captured value): the trace is never held in memory as a whole, nor as a
// tree. Objects are walked member by member and the caller switches on the
// key, so nothing is built that is not kept. Strings and numbers come back
// as views of the window, valid until the next call. The first syntax or
// read error sticks in err and turns every later call into a no-op
// returning zero values, so callers check err once per record.
//
// With a nil reader it scans the bytes it was given (the args object of an
// event, captured whole and read after the event's category is known).
type scanner struct {
	r    io.Reader
	buf  []byte
	i, n int   // buf[i:n] is unread
	base int64 // input offset of buf[0]
	eof  bool
	err  error
	// key is the current member's key (after member returned true); a view
	// of the window or of keyBuf, valid until the value is read.
	key    []byte
	keyBuf []byte
	strBuf []byte
	depth  int
	// capture, when non-nil, receives every byte consumed from capStart on
	// (see captureValue).
	capture  *[]byte
	capStart int
}

// maxDepth bounds nesting, so hostile input cannot make skip recurse or
// count without end.
const maxDepth = 512

// maxToken bounds one string or number (and one captured args object):
// beyond it the input is refused rather than buffered without limit.
const maxToken = 256 << 20

// syntaxError is a problem with the JSON text, at a byte offset of the
// (decompressed) input.
type syntaxError struct {
	off int64
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("invalid JSON at byte %d: %s", e.off, e.msg) }

func newScanner(r io.Reader) *scanner {
	return &scanner{r: r, buf: make([]byte, 256<<10)}
}

// resetBytes makes the scanner read b (no reader).
func (s *scanner) resetBytes(b []byte, base int64) {
	s.r, s.buf, s.i, s.n, s.base, s.eof, s.err, s.depth = nil, b, 0, len(b), base, true, nil, 0
	s.capture = nil
}

func (s *scanner) offset() int64 { return s.base + int64(s.i) }

func (s *scanner) fail(msg string) {
	if s.err == nil {
		if s.i >= s.n && s.eof {
			msg = "unexpected end of input (truncated file?)"
		}
		s.err = &syntaxError{s.offset(), msg}
	}
	s.i, s.n, s.eof = 0, 0, true
	s.r = nil
}

// fill reads more input after buf[:n], keeping buf[i:] (and a capture in
// progress). It returns false at the end of input or on error.
func (s *scanner) fill() bool {
	if s.eof || s.r == nil {
		return false
	}
	if s.capture != nil && s.i > s.capStart {
		*s.capture = append(*s.capture, s.buf[s.capStart:s.i]...)
		s.capStart = s.i
	}
	if s.i > 0 {
		copy(s.buf, s.buf[s.i:s.n])
		s.base += int64(s.i)
		s.n -= s.i
		s.capStart -= s.i
		s.i = 0
	}
	if s.n == len(s.buf) {
		if len(s.buf) >= maxToken {
			s.fail(fmt.Sprintf("a single token is longer than %d MiB", maxToken>>20))
			return false
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.n])
		s.buf = nb
	}
	for {
		m, err := s.r.Read(s.buf[s.n:])
		s.n += m
		if err != nil {
			s.eof = true
			if !errors.Is(err, io.EOF) {
				s.err = fmt.Errorf("reading at byte %d: %w", s.base+int64(s.n), err)
				s.i, s.n = 0, 0
				return false
			}
		}
		if m > 0 || s.eof {
			return m > 0
		}
	}
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (s *scanner) peek() byte {
	for {
		for s.i < s.n {
			switch c := s.buf[s.i]; c {
			case ' ', '\n', '\t', '\r':
				s.i++
			default:
				return c
			}
		}
		if !s.fill() {
			return 0
		}
	}
}

// open consumes c ('{' or '[') and reports whether it was there.
func (s *scanner) open(c byte) bool {
	if s.err != nil {
		return false
	}
	if s.peek() != c {
		if c == '{' {
			s.fail("expected an object")
		} else {
			s.fail("expected an array")
		}
		return false
	}
	s.i++
	s.depth++
	if s.depth > maxDepth {
		s.fail("nested too deeply")
		return false
	}
	return true
}

// member advances to the next member of the object just opened; it sets
// key and returns true, or consumes '}' and returns false. first must start
// true for each object.
func (s *scanner) member(first *bool) bool {
	if s.err != nil {
		return false
	}
	c := s.peek()
	if c == '}' {
		s.i++
		s.depth--
		return false
	}
	if !*first {
		if c != ',' {
			s.fail("expected ',' or '}' in an object")
			return false
		}
		s.i++
		c = s.peek()
	}
	*first = false
	if c != '"' {
		s.fail("expected a member name")
		return false
	}
	k := s.strInto(&s.keyBuf)
	if s.err != nil {
		return false
	}
	// The key must survive the window moving while ':' is found.
	s.keyBuf = append(s.keyBuf[:0], k...)
	s.key = s.keyBuf
	if s.peek() != ':' {
		s.fail("expected ':' after a member name")
		return false
	}
	s.i++
	return true
}

// elem advances to the next element of the array just opened, or consumes
// ']' and returns false.
func (s *scanner) elem(first *bool) bool {
	if s.err != nil {
		return false
	}
	c := s.peek()
	if c == ']' {
		s.i++
		s.depth--
		return false
	}
	if !*first {
		if c != ',' {
			s.fail("expected ',' or ']' in an array")
			return false
		}
		s.i++
		if s.peek() == ']' {
			s.fail("expected a value after ','")
			return false
		}
	}
	*first = false
	if c == 0 {
		s.fail("unexpected end of input in an array")
		return false
	}
	return true
}

// str reads a string value.
func (s *scanner) str() []byte { return s.strInto(&s.strBuf) }

// strInto reads a string, unescaping into buf when it has escapes.
func (s *scanner) strInto(buf *[]byte) []byte {
	if s.err != nil {
		return nil
	}
	if s.peek() != '"' {
		s.fail("expected a string")
		return nil
	}
	from := s.i + 1
	for {
		j := bytes.IndexByte(s.buf[from:s.n], '"')
		if j >= 0 {
			body := s.buf[s.i+1 : from+j]
			if bytes.IndexByte(body, '\\') < 0 {
				if !validText(body) {
					s.fail("control character or invalid UTF-8 in a string")
					return nil
				}
				s.i = from + j + 1
				return body
			}
			return s.strSlow(buf)
		}
		scanned := s.n - s.i
		if !s.fill() {
			s.fail("unterminated string")
			return nil
		}
		from = s.i + scanned
	}
}

// validText reports whether b holds no control character. Invalid UTF-8 is
// kept as it is: names are shown, never interpreted.
func validText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return false
		}
	}
	return true
}

// strSlow reads a string with escapes; s.buf[s.i] is its opening quote.
func (s *scanner) strSlow(buf *[]byte) []byte {
	out := (*buf)[:0]
	s.i++
	for {
		if s.i >= s.n && !s.fill() {
			s.fail("unterminated string")
			return nil
		}
		c := s.buf[s.i]
		switch {
		case c == '"':
			s.i++
			*buf = out
			return out
		case c < 0x20:
			s.fail("control character in a string")
			return nil
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		// An escape: make sure it is in the window whole.
		for s.n-s.i < 12 && s.fill() {
		}
		if s.n-s.i < 2 {
			s.fail("unterminated escape")
			return nil
		}
		e := s.buf[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s.buf[s.i:s.n])
			if !ok {
				s.fail("bad \\u escape")
				return nil
			}
			s.i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(utf8.RuneError)
				if s.n-s.i >= 6 && s.buf[s.i] == '\\' && s.buf[s.i+1] == 'u' {
					if lo, ok := hex4(s.buf[s.i+2 : s.n]); ok {
						if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
							r2 = d
							s.i += 6
						}
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			s.fail("bad escape in a string")
			return nil
		}
	}
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// number reads a number's text (checked for JSON number syntax).
func (s *scanner) number() []byte {
	if s.err != nil {
		return nil
	}
	s.peek()
	j := s.i
	for {
		for j < s.n && isNumByte(s.buf[j]) {
			j++
		}
		if j < s.n {
			break
		}
		rel := j - s.i
		if !s.fill() {
			break
		}
		j = s.i + rel
	}
	b := s.buf[s.i:j]
	s.i = j
	if !validNumber(b) {
		s.fail("invalid number")
		return nil
	}
	return b
}

func isNumByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// validNumber checks JSON number syntax: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(b)
}

// literal consumes true, false or null.
func (s *scanner) literal(lit string) {
	for s.n-s.i < len(lit) && s.fill() {
	}
	if s.n-s.i >= len(lit) && string(s.buf[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return
	}
	s.fail("invalid literal")
}

// skip consumes one value of any type, without building it.
func (s *scanner) skip() {
	if s.err != nil {
		return
	}
	switch c := s.peek(); {
	case c == '{':
		first := true
		if !s.open('{') {
			return
		}
		for s.member(&first) {
			s.skip()
		}
	case c == '[':
		first := true
		if !s.open('[') {
			return
		}
		for s.elem(&first) {
			s.skip()
		}
	case c == '"':
		s.skipString()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		s.number()
	case c == 0:
		s.fail("unexpected end of input")
	default:
		s.fail(fmt.Sprintf("unexpected character %q", c))
	}
}

// skipString consumes a string without unescaping it.
func (s *scanner) skipString() {
	s.i++ // the opening quote
	for {
		for s.i < s.n {
			switch c := s.buf[s.i]; {
			case c == '"':
				s.i++
				return
			case c == '\\':
				if s.i+1 >= s.n {
					if !s.fill() {
						s.fail("unterminated string")
						return
					}
					continue
				}
				s.i += 2
			case c < 0x20:
				s.fail("control character in a string")
				return
			default:
				s.i++
			}
		}
		if !s.fill() {
			s.fail("unterminated string")
			return
		}
	}
}

// captureValue consumes one value and appends its text to dst.
func (s *scanner) captureValue(dst []byte) []byte {
	if s.err != nil {
		return dst
	}
	s.peek()
	s.capture, s.capStart = &dst, s.i
	s.skip()
	if s.err == nil {
		dst = append(dst, s.buf[s.capStart:s.i]...)
	}
	s.capture = nil
	if len(dst) > maxToken {
		s.fail(fmt.Sprintf("an args object is longer than %d MiB", maxToken>>20))
	}
	return dst
}

// end checks that nothing but whitespace follows the document.
func (s *scanner) end() {
	if s.err == nil && s.peek() != 0 {
		s.fail("unexpected data after the top-level object")
	}
}
