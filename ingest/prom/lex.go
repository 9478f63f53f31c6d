package prom

import (
	"math"
	"strconv"
	"strings"
)

// label is one name="value" pair of a sample line, unescaped.
type label struct{ name, value string }

// sampleLine is one parsed sample line.
type sampleLine struct {
	name     string
	labels   []label
	value    float64
	time     int64 // Unix ns
	hasTime  bool
	exemplar bool
}

// parseSampleLine parses
//
//	name{l="v",…} value [timestamp] [# {exemplar labels} value [timestamp]]
//
// including the UTF-8 form {"name", l="v"} and quoted label names. It
// returns a short description of the first problem instead of a sample.
func parseSampleLine(line []byte, buf *[]byte) (s sampleLine, problem string) {
	i := 0
	if line[0] != '{' {
		i = scanName(line, 0, true)
		if i == 0 {
			return s, "malformed metric name"
		}
		s.name = string(line[:i])
	}
	if i < len(line) && line[i] == '{' {
		var msg string
		if i, msg = parseLabels(line, i+1, &s, buf); msg != "" {
			return s, msg
		}
	}
	if s.name == "" {
		return s, "no metric name"
	}
	rest := line[i:]
	if len(rest) == 0 || (rest[0] != ' ' && rest[0] != '\t') {
		return s, "no value"
	}
	fields := strings.Fields(string(rest))
	if len(fields) == 0 {
		return s, "no value"
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return s, "malformed value " + strconv.Quote(fields[0])
	}
	s.value = v
	fields = fields[1:]
	if len(fields) > 0 && fields[0] != "#" && !strings.HasPrefix(fields[0], "#") {
		ns, ok := parseTimestamp(fields[0])
		if !ok {
			return s, "malformed timestamp " + strconv.Quote(fields[0])
		}
		s.time, s.hasTime = ns, true
		fields = fields[1:]
	}
	if len(fields) > 0 {
		if !strings.HasPrefix(fields[0], "#") {
			return s, "unexpected text after the sample"
		}
		// An OpenMetrics exemplar: ignored.
		s.exemplar = true
	}
	return s, ""
}

// scanName returns the end of a metric name (colons allowed) or label name
// starting at i, or i when there is none.
func scanName(b []byte, i int, colon bool) int {
	j := i
	for j < len(b) {
		c := b[j]
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (colon && c == ':') || (j > i && c >= '0' && c <= '9')
		if !ok {
			break
		}
		j++
	}
	return j
}

// parseLabels parses the inside of {…} from i (after the brace) and returns
// the index after the closing brace.
func parseLabels(b []byte, i int, s *sampleLine, buf *[]byte) (int, string) {
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, "unterminated label set"
		}
		if b[i] == '}' {
			return i + 1, ""
		}
		var name string
		if b[i] == '"' {
			str, j, msg := quoted(b, i, buf)
			if msg != "" {
				return j, msg
			}
			i = skipSpace(b, j)
			if i < len(b) && (b[i] == ',' || b[i] == '}') {
				// {"utf8.metric.name", …}: the metric name.
				if s.name != "" {
					return i, "two metric names"
				}
				s.name = str
				if b[i] == ',' {
					i++
				}
				continue
			}
			name = str
		} else {
			j := scanName(b, i, false)
			if j == i {
				return i, "malformed label name"
			}
			name = string(b[i:j])
			i = skipSpace(b, j)
		}
		if i >= len(b) || b[i] != '=' {
			return i, "label " + strconv.Quote(name) + " without ="
		}
		i = skipSpace(b, i+1)
		if i >= len(b) || b[i] != '"' {
			return i, "label " + strconv.Quote(name) + " value is not quoted"
		}
		val, j, msg := quoted(b, i, buf)
		if msg != "" {
			return j, msg
		}
		s.labels = append(s.labels, label{name, val})
		i = skipSpace(b, j)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, ""
		}
		return i, "expected , or } after a label"
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

// quoted reads a double-quoted string at b[i] with the exposition escapes
// \\, \" and \n. Another escape is kept as written (the Prometheus text
// parser's leniency for HELP; label values never need one).
func quoted(b []byte, i int, buf *[]byte) (string, int, string) {
	out := (*buf)[:0]
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		switch c {
		case '"':
			*buf = out
			return string(out), j + 1, ""
		case '\\':
			if j+1 >= len(b) {
				return "", j, "unterminated escape"
			}
			j++
			switch b[j] {
			case 'n':
				out = append(out, '\n')
			case '\\', '"':
				out = append(out, b[j])
			default:
				out = append(out, '\\', b[j])
			}
		default:
			out = append(out, c)
		}
	}
	*buf = out
	return "", len(b), "unterminated quoted string"
}

// metaName reads the metric name after # TYPE, # UNIT or # HELP: plain or
// quoted; it returns the text after it.
func metaName(b []byte, buf *[]byte) (name string, rest []byte, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) {
		return "", nil, false
	}
	if b[i] == '"' {
		s, j, msg := quoted(b, i, buf)
		if msg != "" {
			return "", nil, false
		}
		return s, b[j:], true
	}
	j := scanName(b, i, true)
	if j == i || (j < len(b) && b[j] != ' ' && b[j] != '\t') {
		return "", nil, false
	}
	return string(b[i:j]), b[j:], true
}

// parseValue parses a sample value: a Go float plus the exposition's NaN,
// +Inf and -Inf spellings.
func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf", "Inf", "+inf", "inf":
		return math.Inf(1), nil
	case "-Inf", "-inf":
		return math.Inf(-1), nil
	case "NaN", "nan":
		return math.NaN(), nil
	}
	if strings.ContainsAny(s, "_xXpP") {
		// ParseFloat accepts Go's underscores and hex floats; the format does not.
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(s, 64)
}

// parseTimestamp converts a sample timestamp to Unix ns: an integer is
// milliseconds (Prometheus text) when at least 1e11 and seconds
// (OpenMetrics) below, a number with a fraction or exponent is seconds.
func parseTimestamp(s string) (int64, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n >= 1e11 || n <= -1e11 {
			if n > math.MaxInt64/1_000_000 || n < math.MinInt64/1_000_000 {
				return 0, false
			}
			return n * 1e6, true
		}
		return n * 1e9, true
	}
	if whole, frac, ok := strings.Cut(s, "."); ok && len(frac) > 0 && len(frac) <= 9 && allDigits(frac) {
		// Decimal seconds exactly: a float64 would lose the last microseconds.
		if n, err := strconv.ParseInt(whole, 10, 64); err == nil && n >= 0 && n < 9e9 && whole != "" && allDigits(whole) {
			f, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
			return n*1e9 + f, true
		}
	}
	f, err := parseValue(s)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 9e9 {
		return 0, false
	}
	return int64(math.Round(f * 1e9)), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
