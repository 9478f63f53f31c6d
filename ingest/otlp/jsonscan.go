package otlp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScanner is a pull scanner over one JSON text held in memory (a JSON
// line, a document, a framed record), specialized for what OTLP/JSON needs:
// objects are walked member by member and the caller switches on the key, so
// nothing is built that is not kept; strings come back as views of the input
// unless they contain escapes. The first syntax error sticks in err and makes
// every later call a no-op returning zero values, so callers check err once.
type jsonScanner struct {
	b   []byte
	i   int
	err error
	// key is the current member's key (after member returned true).
	key []byte
	// keyBuf and strBuf hold unescaped keys and strings.
	keyBuf, strBuf []byte
	depth          int
}

// jsonError is a syntax error with its byte offset in the text.
type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.off) }

func (s *jsonScanner) reset(b []byte) {
	s.b, s.i, s.err, s.key, s.depth = b, 0, nil, nil, 0
}

func (s *jsonScanner) fail(msg string) {
	if s.err == nil {
		if s.i >= len(s.b) {
			msg = "unexpected end of input (truncated?)"
		}
		s.err = &jsonError{s.i, msg}
	}
	s.i = len(s.b)
}

func (s *jsonScanner) failf(format string, args ...any) { s.fail(fmt.Sprintf(format, args...)) }

// ws skips whitespace.
func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\n', '\t', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-whitespace byte (0 at the end).
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScanner) literal(lit string) {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return
	}
	s.failf("invalid literal, want %s", lit)
}

// open consumes the opening bracket of an object ('{') or array ('['). It
// returns false for null (nothing to iterate) and on error.
func (s *jsonScanner) open(c byte) bool {
	switch s.peek() {
	case c:
		s.i++
		s.depth++
		if s.depth > maxDepth {
			s.failf("nested more than %d deep", maxDepth)
			return false
		}
		return true
	case 'n':
		s.literal("null")
		return false
	}
	if c == '{' {
		s.fail("expected an object")
	} else {
		s.fail("expected an array")
	}
	return false
}

// member advances to the next member of an object opened with open, reading
// its key into s.key and the colon; it returns false at the closing brace.
// Use as: for first := true; s.member(&first); { switch string(s.key) ... }.
func (s *jsonScanner) member(first *bool) bool {
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
			s.fail("expected ',' or '}' in object")
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
	s.key = s.strInto(&s.keyBuf)
	if s.peek() != ':' {
		s.fail("expected ':' after member name")
		return false
	}
	s.i++
	return s.err == nil
}

// elem advances to the next element of an array opened with open; it returns
// false at the closing bracket.
func (s *jsonScanner) elem(first *bool) bool {
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
			s.fail("expected ',' or ']' in array")
			return false
		}
		s.i++
		s.ws()
	}
	*first = false
	return true
}

// str reads a string value (null reads as empty). The result is a view of the
// input or of a scratch buffer; it is valid until the next call.
func (s *jsonScanner) str() []byte {
	if s.peek() == 'n' {
		s.literal("null")
		return nil
	}
	return s.strInto(&s.strBuf)
}

func (s *jsonScanner) strInto(buf *[]byte) []byte {
	if s.peek() != '"' {
		s.fail("expected a string")
		return nil
	}
	start := s.i + 1
	b := s.b
	i := start
	// Eight bytes at a time: find the first quote or backslash with the
	// "has zero byte" bit trick (Hacker's Delight §6.1); the lowest flagged
	// byte is always a true match.
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := hasZeroByte(w^(ones*'"')) | hasZeroByte(w^(ones*'\\')); m != 0 {
			i += bits.TrailingZeros64(m) / 8
			break
		}
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			s.i = i + 1
			return b[start:i]
		case '\\':
			return s.strSlow(start, buf)
		}
	}
	s.i = len(b)
	s.fail("unterminated string")
	return nil
}

const ones = 0x0101010101010101

// hasZeroByte flags (with its high bit) the lowest zero byte of x, and
// possibly bytes above it.
func hasZeroByte(x uint64) uint64 { return (x - ones) &^ x & (ones * 0x80) }

// strSlow unescapes a string that contains backslashes.
func (s *jsonScanner) strSlow(start int, buf *[]byte) []byte {
	out := (*buf)[:0]
	i := start
	for i < len(s.b) {
		c := s.b[i]
		switch {
		case c == '"':
			s.i = i + 1
			*buf = out
			return out
		case c != '\\':
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(s.b) {
			break
		}
		e := s.b[i+1]
		i += 2
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
			r, ok := hex4(s.b, i)
			if !ok {
				s.i = i
				s.fail("invalid \\u escape")
				return nil
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(s.b, i+2); ok && i+1 < len(s.b) && s.b[i] == '\\' && s.b[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			s.i = i - 1
			s.fail("invalid escape in string")
			return nil
		}
	}
	s.i = len(s.b)
	s.fail("unterminated string")
	return nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
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

// number returns the raw text of a number token.
func (s *jsonScanner) number() []byte {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	if s.i == start {
		s.fail("expected a number")
		return nil
	}
	return s.b[start:s.i]
}

// int64 reads a 64-bit integer written as a JSON number or a decimal string
// (proto3 JSON writes int64 and fixed64 as strings; some emitters don't). A
// number with a fraction or exponent is rounded toward zero.
func (s *jsonScanner) int64() int64 {
	var tok []byte
	switch c := s.peek(); {
	case c == '"':
		tok = s.str()
	case c == 'n':
		s.literal("null")
		return 0
	default:
		tok = s.number()
	}
	if s.err != nil {
		return 0
	}
	v, ok := parseInt(tok)
	if !ok {
		s.failf("invalid integer %q", truncateForMsg(tok))
	}
	return v
}

// parseInt parses a decimal integer; values up to 2^64-1 wrap into int64 (a
// fixed64 time stays right). A fraction or exponent goes through ParseFloat.
func parseInt(b []byte) (int64, bool) {
	neg := false
	i := 0
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i = 1
	}
	if i == len(b) || len(b)-i > 20 {
		return parseIntSlow(b)
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			return parseIntSlow(b)
		}
		nv := v*10 + uint64(c)
		if nv/10 != v {
			return parseIntSlow(b)
		}
		v = nv
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

func parseIntSlow(b []byte) (int64, bool) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	if f >= math.MaxUint64 || f <= math.MinInt64 {
		return 0, false
	}
	if f >= math.MaxInt64 {
		return int64(uint64(f)), true
	}
	return int64(f), true
}

// float64 reads a double: a JSON number, or a string holding one or
// "NaN"/"Infinity"/"-Infinity" (proto3 JSON).
func (s *jsonScanner) float64() float64 {
	var tok []byte
	switch c := s.peek(); {
	case c == '"':
		tok = s.str()
		switch string(tok) {
		case "NaN":
			return math.NaN()
		case "Infinity", "+Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
	case c == 'n':
		s.literal("null")
		return 0
	default:
		tok = s.number()
	}
	if s.err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f
		}
		s.failf("invalid number %q", truncateForMsg(tok))
	}
	return f
}

// bool reads true/false (or the strings "true"/"false").
func (s *jsonScanner) bool() bool {
	switch s.peek() {
	case 't':
		s.literal("true")
		return true
	case 'f':
		s.literal("false")
		return false
	case 'n':
		s.literal("null")
		return false
	case '"':
		v := s.str()
		switch string(v) {
		case "true":
			return true
		case "false", "":
			return false
		}
		s.failf("invalid boolean %q", truncateForMsg(v))
		return false
	}
	s.fail("expected a boolean")
	return false
}

// skip passes over one value of any type, checking its syntax.
func (s *jsonScanner) skip() {
	switch c := s.peek(); c {
	case '{':
		if !s.open('{') {
			return
		}
		for first := true; s.member(&first); {
			s.skip()
		}
	case '[':
		if !s.open('[') {
			return
		}
		for first := true; s.elem(&first); {
			s.skip()
		}
	case '"':
		s.skipString()
	case 't':
		s.literal("true")
	case 'f':
		s.literal("false")
	case 'n':
		s.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			tok := s.number()
			if !validNumber(tok) {
				s.failf("invalid number %q", truncateForMsg(tok))
			}
			return
		}
		s.fail("expected a value")
	}
}

// skipString passes over a string without unescaping it.
func (s *jsonScanner) skipString() {
	i := s.i + 1
	for {
		j := bytes.IndexByte(s.b[i:], '"')
		if j < 0 {
			s.i = len(s.b)
			s.fail("unterminated string")
			return
		}
		i += j
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for k := i - 1; k > s.i && s.b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			s.i = i
			return
		}
	}
}

// validNumber reports whether tok is a JSON number.
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if digits() == 0 {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// rawValue skips one value and returns its text.
func (s *jsonScanner) rawValue() []byte {
	s.ws()
	start := s.i
	s.skip()
	if s.err != nil {
		return nil
	}
	return s.b[start:s.i]
}

func truncateForMsg(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
