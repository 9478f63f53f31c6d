package jsonscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// DefaultMaxDepth bounds nesting when Scanner.MaxDepth is 0.
const DefaultMaxDepth = 512

// MaxToken bounds, in stream mode, one string or number and one value
// captured with AppendValue: beyond it the input is refused rather than
// buffered without limit.
const MaxToken = 256 << 20

// windowSize is the stream window's first size.
const windowSize = 256 << 10

// maxEmptyReads is how many reads in a row may return nothing before the
// reader is taken to be stuck (bufio's limit).
const maxEmptyReads = 100

// SyntaxError is a problem with the JSON text at a byte offset of the input.
type SyntaxError struct {
	Offset int64
	Msg    string
}

func (e *SyntaxError) Error() string { return e.Msg + " at byte " + strconv.FormatInt(e.Offset, 10) }

// Scanner reads one JSON text, in buffer mode (Reset, ResetAt) or stream
// mode (ResetReader). Its zero value reads an empty buffer.
//
// Values are read with the method of their kind: Open and then Member or
// Elem for objects and arrays (null opens nothing), Str, Number, Skip for
// any value, RawValue or AppendValue for its text. Str and Number return
// views valid until the next call; Key is valid until the member's value
// has been read.
type Scanner struct {
	// MaxDepth bounds the nesting of objects and arrays (DefaultMaxDepth
	// when 0); deeper input is a syntax error. Reset keeps it.
	MaxDepth int
	// LaxSkip makes a skipped string (Skip, never one that is read) accept a
	// backslash before any character, and End accept NUL bytes (zero fill)
	// after the top-level value: the PyTorch profiler reader's rules from
	// before this scanner, so that a trace it read whole still is.
	LaxSkip bool

	r    io.Reader
	buf  []byte // buf[i:n] is unread
	win  []byte // the stream window buf is, in stream mode
	i, n int
	base int64 // input offset of buf[0]
	eof  bool
	err  error

	key    []byte
	keyBuf []byte
	strBuf []byte
	rawBuf []byte
	depth  int

	// capture, when non-nil, receives every byte the window drops from
	// capStart on (AppendValue in stream mode).
	capture  *[]byte
	capStart int
}

// Reset makes s read b from its start, in buffer mode.
func (s *Scanner) Reset(b []byte) { s.ResetAt(b, 0, 0) }

// ResetAt makes s read b, a value captured from a larger text: offsets in
// errors count from base and nesting from depth, as in the larger text.
func (s *Scanner) ResetAt(b []byte, base int64, depth int) {
	s.r, s.buf, s.i, s.n, s.base, s.eof, s.err = nil, b, 0, len(b), base, true, nil
	s.key, s.depth, s.capture = nil, depth, nil
}

// ResetReader makes s read r, in stream mode, through a window of its own.
func (s *Scanner) ResetReader(r io.Reader) {
	if s.win == nil {
		s.win = make([]byte, windowSize)
	}
	s.r, s.buf, s.i, s.n, s.base, s.eof, s.err = r, s.win, 0, 0, 0, false, nil
	s.key, s.depth, s.capture = nil, 0, nil
}

// Err is the first syntax or read error, if any.
func (s *Scanner) Err() error { return s.err }

// Offset is the input offset of the next unread byte.
func (s *Scanner) Offset() int64 { return s.base + int64(s.i) }

// Depth is how many objects and arrays are open.
func (s *Scanner) Depth() int { return s.depth }

// Key is the current member's name (after Member returned true): a view of
// the input or of a buffer of s.
func (s *Scanner) Key() []byte { return s.key }

// Rest is what is left unread of the current window: in buffer mode, the
// rest of the text.
func (s *Scanner) Rest() []byte { return s.buf[s.i:s.n] }

// Fail records a syntax error at the current offset (unless one is already
// recorded) and ends the text: every later call is a no-op. At the end of
// the input the message says it ended early instead.
func (s *Scanner) Fail(msg string) {
	if s.err == nil && s.i >= s.n && !s.eof {
		s.fill() // learn whether the input ends here
	}
	if s.err == nil {
		if s.i >= s.n && s.eof {
			msg = "unexpected end of input (truncated?)"
		}
		s.err = &SyntaxError{s.Offset(), msg}
	}
	s.stop()
}

// FailWith records err (unless an error is already recorded) and ends the
// text: for a reader that found a problem in a value it scanned apart.
func (s *Scanner) FailWith(err error) {
	if s.err == nil {
		s.err = err
	}
	s.stop()
}

func (s *Scanner) stop() {
	s.i, s.eof, s.r = s.n, true, nil
}

func (s *Scanner) maxDepth() int {
	if s.MaxDepth > 0 {
		return s.MaxDepth
	}
	return DefaultMaxDepth
}

// fill reads more input after buf[:n], keeping buf[i:] (and a capture in
// progress). It returns false at the end of input or on error; either way
// buf[i:] may have moved to the start of the window.
func (s *Scanner) fill() bool {
	if s.eof || s.r == nil {
		return false
	}
	if s.capture != nil && s.i > s.capStart {
		*s.capture = append(*s.capture, s.buf[s.capStart:s.i]...)
		s.capStart = s.i
		if len(*s.capture) > MaxToken {
			// Stop while the copy is still bounded, not once the value ends.
			s.capture = nil
			s.Fail(fmt.Sprintf("a value is longer than %d MiB", MaxToken>>20))
			return false
		}
	}
	if s.i > 0 {
		copy(s.buf, s.buf[s.i:s.n])
		s.base += int64(s.i)
		s.n -= s.i
		s.capStart -= s.i
		s.i = 0
	}
	if s.n == len(s.buf) {
		if len(s.buf) >= MaxToken {
			s.Fail(fmt.Sprintf("a single token is longer than %d MiB", MaxToken>>20))
			return false
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.n])
		s.buf, s.win = nb, nb
	}
	for empty := 0; ; empty++ {
		if empty == maxEmptyReads {
			s.FailWith(fmt.Errorf("reading at byte %d: %w", s.base+int64(s.n), io.ErrNoProgress))
			return false
		}
		m, err := s.r.Read(s.buf[s.n:])
		s.n += m
		if err != nil {
			s.eof = true
			if !errors.Is(err, io.EOF) {
				s.FailWith(fmt.Errorf("reading at byte %d: %w", s.base+int64(s.n), err))
				return false
			}
		}
		if m > 0 || s.eof {
			return m > 0
		}
	}
}

// Peek skips white space and returns the next byte, 0 at the end.
func (s *Scanner) Peek() byte {
	// Most tokens follow the last one directly: that case inlines.
	if s.i < s.n && s.buf[s.i] > ' ' {
		return s.buf[s.i]
	}
	return s.peekSlow()
}

func (s *Scanner) peekSlow() byte {
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

// More skips white space and reports whether anything follows.
func (s *Scanner) More() bool {
	s.Peek()
	return s.i < s.n
}

// End checks that nothing but white space follows.
func (s *Scanner) End() {
	if s.err == nil && s.More() && !(s.LaxSkip && s.nulsToEnd()) {
		s.Fail("unexpected data after the top-level value")
	}
}

// nulsToEnd reports whether nothing but NUL bytes and white space is left,
// consuming them.
func (s *Scanner) nulsToEnd() bool {
	for {
		for s.i < s.n {
			switch s.buf[s.i] {
			case 0, ' ', '\t', '\n', '\r':
				s.i++
			default:
				return false
			}
		}
		if !s.fill() {
			return s.err == nil
		}
	}
}

func (s *Scanner) literal(lit string) {
	for s.n-s.i < len(lit) && s.fill() {
	}
	if s.n-s.i >= len(lit) && string(s.buf[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return
	}
	s.Fail("invalid literal, want " + lit)
}

// Open consumes the opening bracket c of an object ('{') or array ('[') and
// reports whether it was there. null opens nothing (false, no error: proto3
// JSON writes it for an absent message or list); anything else is an error.
func (s *Scanner) Open(c byte) bool {
	switch s.Peek() {
	case c:
		if s.depth >= s.maxDepth() {
			s.Fail(fmt.Sprintf("nested more than %d deep", s.maxDepth()))
			return false
		}
		s.i++
		s.depth++
		return true
	case 'n':
		s.literal("null")
		return false
	}
	if c == '{' {
		s.Fail("expected an object")
	} else {
		s.Fail("expected an array")
	}
	return false
}

// Member advances to the next member of an object opened with Open, reading
// its name (Key) and the colon; it returns false at the closing brace. Use
// as: for first := true; s.Member(&first); { switch string(s.Key()) … }.
func (s *Scanner) Member(first *bool) bool {
	if s.err != nil {
		return false
	}
	c := s.Peek()
	if c == '}' {
		s.i++
		s.depth--
		return false
	}
	if !*first {
		if c != ',' {
			s.Fail("expected ',' or '}' in object")
			return false
		}
		s.i++
		c = s.Peek()
	}
	*first = false
	if c != '"' {
		s.Fail("expected a member name")
		return false
	}
	k := s.strInto(&s.keyBuf)
	if s.err != nil {
		return false
	}
	if s.r != nil {
		// The name must survive the window moving while ':' is found.
		s.keyBuf = append(s.keyBuf[:0], k...)
		k = s.keyBuf
	}
	s.key = k
	if s.Peek() != ':' {
		s.Fail("expected ':' after member name")
		return false
	}
	s.i++
	return true
}

// Elem advances to the next element of an array opened with Open; it
// returns false at the closing bracket.
func (s *Scanner) Elem(first *bool) bool {
	if s.err != nil {
		return false
	}
	c := s.Peek()
	if c == ']' {
		s.i++
		s.depth--
		return false
	}
	if !*first {
		if c != ',' {
			s.Fail("expected ',' or ']' in array")
			return false
		}
		s.i++
		if s.Peek() == ']' {
			s.Fail("expected a value after ','")
			return false
		}
	}
	*first = false
	if c == 0 && s.i >= s.n {
		s.Fail("unexpected end of input in an array")
		return false
	}
	return true
}

// Str reads a string value; null reads as empty (proto3 JSON's default).
// The result is a view of the input or of a buffer of s, valid until the
// next call.
func (s *Scanner) Str() []byte {
	if s.Peek() == 'n' {
		s.literal("null")
		return nil
	}
	return s.strInto(&s.strBuf)
}

// strInto reads a string, unescaping into buf when it has escapes.
func (s *Scanner) strInto(buf *[]byte) []byte {
	if s.Peek() != '"' {
		s.Fail("expected a string")
		return nil
	}
	j := s.i + 1
	for {
		j = special(s.buf[:s.n], j)
		if j < s.n {
			switch s.buf[j] {
			case '"':
				body := s.buf[s.i+1 : j]
				s.i = j + 1
				return body
			case '\\':
				return s.strSlow(buf, j)
			}
			s.i = j
			s.Fail("control character in a string")
			return nil
		}
		rel := j - s.i
		if !s.fill() {
			s.i = s.n
			s.Fail("unterminated string")
			return nil
		}
		j = s.i + rel
	}
}

const ones = 0x0101010101010101

// special returns the index of the first byte of b[i:] that ends a plain
// run of string text (a quote, a backslash or a control character), or
// len(b). Eight bytes at a time it flags them with the "has zero byte" and
// "has byte less than" bit tricks (Hacker's Delight §6.1); the lowest
// flagged byte is always a true match.
func special(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := hasZeroByte(w^(ones*'"')) | hasZeroByte(w^(ones*'\\')) | hasLessThan(w, 0x20); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// hasZeroByte flags (with its high bit) the lowest zero byte of x, and
// possibly bytes above it.
func hasZeroByte(x uint64) uint64 { return (x - ones) &^ x & (ones * 0x80) }

// hasLessThan flags the lowest byte of x below n (n ≤ 128), and possibly
// bytes above it.
func hasLessThan(x uint64, n uint64) uint64 { return (x - ones*n) &^ x & (ones * 0x80) }

// strSlow reads a string with escapes: buf[s.i] is its opening quote and
// buf[j] the first backslash.
func (s *Scanner) strSlow(buf *[]byte, j int) []byte {
	out := append((*buf)[:0], s.buf[s.i+1:j]...)
	s.i = j
	for {
		if len(out) > MaxToken {
			// The unescaped copy is bounded as the window is.
			s.Fail(fmt.Sprintf("a single token is longer than %d MiB", MaxToken>>20))
			return nil
		}
		if s.i >= s.n && !s.fill() {
			s.i = s.n
			s.Fail("unterminated string")
			return nil
		}
		c := s.buf[s.i]
		switch {
		case c == '"':
			s.i++
			*buf = out
			return out
		case c < 0x20:
			s.Fail("control character in a string")
			return nil
		case c != '\\':
			k := special(s.buf[:s.n], s.i)
			out = append(out, s.buf[s.i:k]...)
			s.i = k
			continue
		}
		// An escape: make sure it is in the window whole (a surrogate
		// pair is twelve bytes).
		for s.n-s.i < 12 && s.fill() {
		}
		if s.n-s.i < 2 {
			s.i = s.n
			s.Fail("unterminated string")
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
				s.Fail("invalid \\u escape")
				return nil
			}
			s.i += 4
			if utf16.IsSurrogate(r) {
				pair := rune(utf8.RuneError)
				if s.n-s.i >= 6 && s.buf[s.i] == '\\' && s.buf[s.i+1] == 'u' {
					if lo, ok := hex4(s.buf[s.i+2 : s.n]); ok {
						if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
							pair = d
							s.i += 6
						}
					}
				}
				r = pair
			}
			out = utf8.AppendRune(out, r)
		default:
			s.i--
			s.Fail("invalid escape in string")
			return nil
		}
	}
}

// hex4 reads four hex digits from the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		v := hexVal[c]
		if v > 15 {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// hexVal maps an ASCII hex digit to its value and anything else to 0xff.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
		t[c-'a'+'A'] = byte(c - 'a' + 10)
	}
	return t
}()

// HexDigit is the value of the ASCII hex digit c, or 0xff if c is none.
func HexDigit(c byte) byte { return hexVal[c] }

// escapeLen is the length of the valid escape at the start of b (b[0] is a
// backslash), 0 if there is none.
func escapeLen(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if _, ok := hex4(b[2:]); ok {
			return 6
		}
	}
	return 0
}

// skipString passes over a string (buf[i] is its opening quote) without
// unescaping it, checking its syntax; the window keeps only what is unread.
func (s *Scanner) skipString() {
	s.i++
	for {
		s.i = special(s.buf[:s.n], s.i)
		if s.i == s.n {
			if !s.fill() {
				s.i = s.n
				s.Fail("unterminated string")
				return
			}
			continue
		}
		switch s.buf[s.i] {
		case '"':
			s.i++
			return
		case '\\':
			for s.n-s.i < 6 && s.fill() {
			}
			if s.err != nil {
				return
			}
			if k := escapeLen(s.buf[s.i:s.n]); k > 0 {
				s.i += k
				continue
			}
			if s.n-s.i < 2 {
				s.i = s.n
				s.Fail("unterminated string")
				return
			}
			if s.LaxSkip {
				s.i += 2
				continue
			}
			s.i++
			s.Fail("invalid escape in string")
			return
		}
		s.Fail("control character in a string")
		return
	}
}

// Number reads a number and returns its text, checked for JSON number
// syntax.
func (s *Scanner) Number() []byte {
	s.Peek()
	if s.err != nil {
		return nil
	}
	j := s.i
	for {
		for j < s.n && isNumByte(s.buf[j]) {
			j++
		}
		if j < s.n {
			break
		}
		rel := j - s.i
		more := s.fill()
		if s.err != nil {
			return nil
		}
		j = s.i + rel
		if !more {
			break
		}
	}
	b := s.buf[s.i:j]
	switch {
	case len(b) == 0:
		s.Fail("expected a number")
		return nil
	case !validNumber(b):
		s.Fail(fmt.Sprintf("invalid number %q", Truncate(b)))
		return nil
	}
	s.i = j
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
	digits := func() bool {
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > d
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(b)
}

// Literal reads true, false or null, reporting which (null reads as false).
// Anything else is an error.
func (s *Scanner) Literal() (v, null bool) {
	switch s.Peek() {
	case 't':
		s.literal("true")
		return true, false
	case 'f':
		s.literal("false")
		return false, false
	case 'n':
		s.literal("null")
		return false, true
	}
	s.Fail("expected a boolean")
	return false, false
}

// Skip passes over one value of any kind, checking its syntax.
func (s *Scanner) Skip() {
	switch c := s.Peek(); {
	case c == '{':
		if !s.Open('{') {
			return
		}
		for first := true; s.Member(&first); {
			s.Skip()
		}
	case c == '[':
		if !s.Open('[') {
			return
		}
		for first := true; s.Elem(&first); {
			s.Skip()
		}
	case c == '"':
		s.skipString()
	case c == 't' || c == 'f' || c == 'n':
		s.Literal()
	case c == '-' || c >= '0' && c <= '9':
		s.Number()
	default:
		s.Fail("expected a value")
	}
}

// RawValue passes over one value and returns its text: in buffer mode a
// view of the input, in stream mode a copy valid until the next call. It
// returns nil on error.
func (s *Scanner) RawValue() []byte {
	if s.r != nil {
		s.rawBuf = s.AppendValue(s.rawBuf[:0])
		if s.err != nil {
			return nil
		}
		return s.rawBuf
	}
	s.Peek()
	start := s.i
	s.Skip()
	if s.err != nil {
		return nil
	}
	return s.buf[start:s.i]
}

// AppendValue passes over one value and appends its text to dst; in
// stream mode the window does not grow to hold it, and a value over
// MaxToken is an error.
func (s *Scanner) AppendValue(dst []byte) []byte {
	if s.r == nil {
		return append(dst, s.RawValue()...)
	}
	s.Peek()
	if s.err != nil {
		return dst
	}
	s.capture, s.capStart = &dst, s.i
	s.Skip()
	if s.err == nil {
		dst = append(dst, s.buf[s.capStart:s.i]...)
	}
	s.capture = nil
	if len(dst) > MaxToken {
		s.Fail(fmt.Sprintf("a value is longer than %d MiB", MaxToken>>20))
	}
	return dst
}

// Truncate shortens a token for an error message.
func Truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
