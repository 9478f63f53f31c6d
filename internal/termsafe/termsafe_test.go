package termsafe

import (
	"bytes"
	"testing"
)

func TestWriter(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text and layout", "kernel\tms\n", "kernel\tms\n"},
		{"colour passes", "\x1b[1;38;5;12mgemm\x1b[0m", "\x1b[1;38;5;12mgemm\x1b[0m"},
		{"window title", "a\x1b]0;pwned\x07b", `a\x1b]0;pwned\x07b`},
		{"clear screen", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"carriage return", "evil\rgood", `evil\x0dgood`},
		{"backspace and bell", "a\bb\x07", `a\x08b\x07`},
		{"DEL", "a\x7f", `a\x7f`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"invalid byte", "a\x9bb", `a\x9bb`},
		{"unicode passes", "flash_fwd·μs→✓", "flash_fwd·μs→✓"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Whole, and one byte per write: sequences split across
			// writes are judged whole.
			for _, split := range []bool{false, true} {
				var b bytes.Buffer
				w := New(&b)
				if split {
					for i := range len(tc.in) {
						w.Write([]byte{tc.in[i]})
					}
				} else {
					w.Write([]byte(tc.in))
				}
				w.Flush()
				if b.String() != tc.want {
					t.Errorf("split=%v: %q, want %q", split, b.String(), tc.want)
				}
			}
		})
	}
	var b bytes.Buffer
	w := New(&b)
	w.Write([]byte("end\x1b"))
	w.Flush()
	if b.String() != `end\x1b` {
		t.Errorf("a trailing ESC: %q", b.String())
	}
}
