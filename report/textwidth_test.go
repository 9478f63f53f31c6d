package report

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestElideMiddle(t *testing.T) {
	cases := []struct {
		name, in string
		n        int
		want     string
	}{
		{"fits", "gemm", 10, "gemm"},
		{"exact", "abcdef", 6, "abcdef"},
		{"cut", "void flash_fwd_kernel<traits>(params)", 11, "void …rams)"},
		{"runes", "µµµµµµµµ", 5, "µµ…µµ"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := elideMiddle(tc.in, tc.n)
			if got != tc.want {
				t.Errorf("elideMiddle(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
			}
			if len([]rune(tc.in)) > tc.n && len([]rune(got)) != tc.n {
				t.Errorf("%q is not %d runes", got, tc.n)
			}
		})
	}
}

// TestTableFit: a table too wide first elides its names, then splits into
// tables that repeat the first column; every line fits.
func TestTableFit(t *testing.T) {
	mk := func() *table {
		tb := newTable("kernel", "category", "count", "total", "share", "a", "b", "c", "d")
		tb.row(strings.Repeat("k", 70), "gemm", "7,056", "866ms", "49.1%", "1.0%", "2.0%", "3.0%", "4.0%")
		tb.row("short", "attention", "1", "1ms", "0.1%", "1.0%", "2.0%", "3.0%", "4.0%")
		return tb
	}
	for _, width := range []int{60, 40, 30} {
		var b strings.Builder
		mk().render(&b, styles{width: width}, 2)
		for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			if w := ansi.StringWidth(l); w > width {
				t.Errorf("width %d: line %q is %d wide", width, l, w)
			}
		}
		if strings.Count(b.String(), "short") < 1 {
			t.Errorf("width %d: rows lost:\n%s", width, b.String())
		}
		if width < 40 && strings.Count(b.String(), "short") < 2 {
			t.Errorf("width %d: expected a split table repeating the first column:\n%s", width, b.String())
		}
	}
	var b strings.Builder
	mk().render(&b, styles{}, 2)
	if !strings.Contains(b.String(), strings.Repeat("k", 70)) {
		t.Error("without a width the table must stay whole")
	}
}

func TestFitLines(t *testing.T) {
	in := "  " + strings.Repeat("word ", 30) + "\nshort\n"
	out := fitLines(in, 40)
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 40 {
			t.Errorf("line %q over 40", l)
		}
	}
	if strings.Count(out, "word") != 30 || !strings.Contains(out, "\n    word") || !strings.HasSuffix(out, "short\n") {
		t.Errorf("words lost or continuation not indented:\n%s", out)
	}
}
