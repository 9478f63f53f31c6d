package otlp

import (
	"math"
	"strconv"

	"github.com/llmprof/llmprof/internal/jsonscan"
)

// jsonScanner is the JSON scanner (internal/jsonscan, buffer mode) with the
// readers of proto3 JSON's scalars that OTLP/JSON needs beside its syntax:
// 64-bit integers written as strings, doubles as "NaN" or "Infinity",
// booleans as strings. Nesting is bounded by maxDepth, as in protobuf.
type jsonScanner struct {
	jsonscan.Scanner
}

func (s *jsonScanner) reset(b []byte) {
	s.MaxDepth = maxDepth
	s.Reset(b)
}

// resetNested makes s read b, a value captured from a text at offset base
// and depth.
func (s *jsonScanner) resetNested(b []byte, base int64, depth int) {
	s.MaxDepth = maxDepth
	s.ResetAt(b, base, depth)
}

// scalar reads a number's text, or a string's (quoted); ok is false for
// null and on error.
func (s *jsonScanner) scalar() (tok []byte, quoted, ok bool) {
	switch s.Peek() {
	case '"':
		tok, quoted = s.Str(), true
	case 'n':
		s.Literal()
		return nil, false, false
	default:
		tok = s.Number()
	}
	return tok, quoted, s.Err() == nil
}

// int64 reads a 64-bit integer written as a JSON number or a decimal string
// (proto3 JSON writes int64 and fixed64 as strings; some emitters don't). A
// number with a fraction or exponent is rounded toward zero.
func (s *jsonScanner) int64() int64 {
	tok, _, ok := s.scalar()
	if !ok {
		return 0
	}
	v, ok := parseInt(tok)
	if !ok {
		s.Fail("invalid integer " + strconv.Quote(jsonscan.Truncate(tok)))
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
	tok, quoted, ok := s.scalar()
	if !ok {
		return 0
	}
	if quoted {
		switch string(tok) {
		case "NaN":
			return math.NaN()
		case "Infinity", "+Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f
		}
		s.Fail("invalid number " + strconv.Quote(jsonscan.Truncate(tok)))
	}
	return f
}

// bool reads true/false (or the strings "true"/"false"); null reads as
// false.
func (s *jsonScanner) bool() bool {
	if s.Peek() != '"' {
		v, _ := s.Literal()
		return v
	}
	v := s.Str()
	switch string(v) {
	case "true":
		return true
	case "false", "":
		return false
	}
	s.Fail("invalid boolean " + strconv.Quote(jsonscan.Truncate(v)))
	return false
}
