package jsonscan

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// modes runs f on a scanner reading in in buffer mode and in stream mode,
// one byte a read (the window moves at every byte).
func modes(t *testing.T, in string, f func(t *testing.T, s *Scanner)) {
	t.Helper()
	t.Run("buffer", func(t *testing.T) {
		var s Scanner
		s.Reset([]byte(in))
		f(t, &s)
	})
	t.Run("stream", func(t *testing.T) {
		var s Scanner
		s.ResetReader(iotest.OneByteReader(strings.NewReader(in)))
		f(t, &s)
	})
}

func TestStrings(t *testing.T) {
	cases := []struct {
		name, in, want, err string
	}{
		{"short", `"abc"`, "abc", ""},
		{"empty", `""`, "", ""},
		{"null", `null`, "", ""},
		{"exactly eight", `"12345678"`, "12345678", ""},
		{"long", `"` + strings.Repeat("x", 70) + `"`, strings.Repeat("x", 70), ""},
		{"quote escape at every offset", `"` + strings.Repeat("a", 13) + `\"b"`, strings.Repeat("a", 13) + `"b`, ""},
		{"escapes", `"a\\b\/c\n\t\r\b\f"`, "a\\b/c\n\t\r\b\f", ""},
		{"text after an escape", `"\n` + strings.Repeat("y", 30) + `"`, "\n" + strings.Repeat("y", 30), ""},
		{"unicode", `"\u00e9\u4e2d"`, "é中", ""},
		{"surrogate pair", `"\ud83d\ude00"`, "😀", ""},
		{"lone surrogate", `"\ud83d x"`, "\uFFFD x", ""},
		{"utf-8 passes through", `"héllo"`, "héllo", ""},
		{"invalid utf-8 is kept", "\"a\xffb\"", "a\xffb", ""},
		{"unterminated", `"abc`, "", "unexpected end of input"},
		{"unterminated after escape", `"ab\`, "", "unexpected end of input"},
		{"bad escape", `"a\x"`, "", "invalid escape"},
		{"bad unicode escape", `"\u12g4"`, "", "invalid \\u escape"},
		{"control character", "\"a\tb\"", "", "control character"},
		{"control character after an escape", "\"\\n\x01\"", "", "control character"},
		{"not a string", `12`, "", "expected a string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			modes(t, c.in, func(t *testing.T, s *Scanner) {
				got := string(s.Str())
				if c.err != "" {
					if s.Err() == nil || !strings.Contains(s.Err().Error(), c.err) {
						t.Fatalf("err = %v, want %q", s.Err(), c.err)
					}
					return
				}
				if s.Err() != nil || got != c.want {
					t.Fatalf("Str() = %q, %v; want %q", got, s.Err(), c.want)
				}
				if s.Offset() != int64(len(c.in)) {
					t.Fatalf("scanner at %d, want %d", s.Offset(), len(c.in))
				}
			})
		})
	}
}

func TestSkip(t *testing.T) {
	cases := []struct {
		name, in string
		ok       bool
	}{
		{"nested", `{"a":[1,-2.5e3,"x\"]",{"b":null,"c":true}],"d":false}`, true},
		{"escaped backslash before quote", `"a\\"`, true},
		{"empty containers", `[{},[],""]`, true},
		{"unicode escape", `"\u00e9"`, true},
		{"bad number", `-`, false},
		{"leading zero", `01`, false},
		{"leading zero fraction", `0.5`, true},
		{"no digits after the point", `1.`, false},
		{"missing value", `{"a":}`, false},
		{"missing comma", `[1 2]`, false},
		{"trailing comma", `[1,]`, false},
		{"trailing comma in an object", `{"a":1,}`, false},
		{"truncated", `{"a":[1,2`, false},
		{"bad literal", `tru`, false},
		{"bad escape", `"\q"`, false},
		{"bad unicode escape", `"\u12x4"`, false},
		{"control character", "\"a\nb\"", false},
		{"too deep", strings.Repeat("[", 10) + strings.Repeat("]", 10), false},
		{"deep enough", strings.Repeat("[", 8) + strings.Repeat("]", 8), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			modes(t, c.in, func(t *testing.T, s *Scanner) {
				s.MaxDepth = 8
				s.Skip()
				s.End()
				if ok := s.Err() == nil; ok != c.ok {
					t.Fatalf("Skip(%s): err=%v; want ok=%v", c.in, s.Err(), c.ok)
				}
			})
		})
	}
}

// A walk through an object: keys, the kinds of values, raw values, and the
// offset of an error.
func TestWalk(t *testing.T) {
	in := `{"name": "step", "n": -12.5e1, "ok": true, "args": {"k": [1, "two", null]}, "tail": [] }`
	modes(t, in, func(t *testing.T, s *Scanner) {
		var got []string
		if !s.Open('{') {
			t.Fatal(s.Err())
		}
		for first := true; s.Member(&first); {
			key := string(s.Key())
			switch key {
			case "name":
				got = append(got, key+"="+string(s.Str()))
			case "n":
				got = append(got, key+"="+string(s.Number()))
			case "ok":
				v, _ := s.Literal()
				got = append(got, key+"="+map[bool]string{true: "T", false: "F"}[v])
			case "args":
				got = append(got, key+"="+string(s.RawValue()))
			default:
				got = append(got, key)
				s.Skip()
			}
		}
		s.End()
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
		want := `name=step n=-12.5e1 ok=T args={"k": [1, "two", null]} tail`
		if g := strings.Join(got, " "); g != want {
			t.Fatalf("got  %s\nwant %s", g, want)
		}
	})
}

func TestErrorOffset(t *testing.T) {
	in := `{"a": [1, 2, x]}`
	modes(t, in, func(t *testing.T, s *Scanner) {
		s.Skip()
		var se *SyntaxError
		if !errors.As(s.Err(), &se) || se.Offset != int64(strings.Index(in, "x")) || se.Msg != "expected a value" {
			t.Fatalf("err = %#v, want expected a value at byte %d", s.Err(), strings.Index(in, "x"))
		}
		if got := s.Err().Error(); got != "expected a value at byte 13" {
			t.Fatalf("Error() = %q", got)
		}
		// Sticky: later calls are no-ops.
		if s.Open('{') || s.Str() != nil || s.More() {
			t.Fatal("a call after the error did something")
		}
	})
}

// ResetAt: offsets in errors count from the captured value's place.
func TestResetAt(t *testing.T) {
	var s Scanner
	s.MaxDepth = 3
	s.ResetAt([]byte(`[[1]]`), 100, 2)
	s.Skip()
	var se *SyntaxError
	if !errors.As(s.Err(), &se) || se.Offset != 101 {
		t.Fatalf("err = %v, want too deep at byte 101 (the second bracket)", s.Err())
	}
}

// AppendValue in stream mode captures a value larger than the window
// without growing the window to it.
func TestAppendValueStream(t *testing.T) {
	big := `{"k": "` + strings.Repeat("v", 3*windowSize) + `", "n": [1, 2]}`
	var s Scanner
	s.ResetReader(strings.NewReader(`[` + big + `, 7]`))
	first := true
	if !s.Open('[') || !s.Elem(&first) {
		t.Fatal(s.Err())
	}
	got := s.AppendValue([]byte("x"))
	if s.Err() != nil || string(got) != "x"+big {
		t.Fatalf("AppendValue: %v, %d bytes", s.Err(), len(got))
	}
	if len(s.win) > windowSize {
		t.Fatalf("window grew to %d bytes", len(s.win))
	}
	if !s.Elem(&first) || string(s.Number()) != "7" || s.Elem(&first) {
		t.Fatal("after the captured value:", s.Err())
	}
}

// A reader that fails, or returns nothing for ever, ends the text with an
// error that says so.
func TestReadErrors(t *testing.T) {
	var s Scanner
	s.ResetReader(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader(`[1, 2]`))))
	s.Skip()
	if !errors.Is(s.Err(), iotest.ErrTimeout) {
		t.Fatalf("err = %v, want the reader's", s.Err())
	}
	s.ResetReader(stuckReader{})
	s.Skip()
	if !errors.Is(s.Err(), io.ErrNoProgress) {
		t.Fatalf("err = %v, want io.ErrNoProgress", s.Err())
	}
}

type stuckReader struct{}

func (stuckReader) Read([]byte) (int, error) { return 0, nil }

func TestSpecial(t *testing.T) {
	for _, tc := range []string{`"`, `\`, "\x00", "\x1f"} {
		for at := 0; at < 20; at++ {
			b := []byte(strings.Repeat("a\x80\xff ", 5)[:20])
			b[at] = tc[0]
			if got := special(b, 0); got != at {
				t.Errorf("special(%q) = %d, want %d", b, got, at)
			}
		}
	}
	if got := special(bytes.Repeat([]byte{0x20, 0x7f, 0x80, 0xff}, 5), 0); got != 20 {
		t.Errorf("special of plain text = %d, want 20", got)
	}
}
