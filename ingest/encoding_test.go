package ingest

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
	"unicode/utf16"
)

func encodeUTF16(s string, big bool) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		if big {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return b
}

// UTF-16 transcodes to UTF-8 however the reads split it: surrogate pairs
// (emoji), BMP text, and a broken tail.
func TestUTF16Reader(t *testing.T) {
	text := `{"name":"tokenize ✓ 🚀","k":"日本語"}` + "\n"
	for _, c := range []struct {
		name string
		in   []byte
		enc  Encoding
		want string
	}{
		{"le", append([]byte{0xff, 0xfe}, encodeUTF16(text, false)...), EncodingUTF16LE, text},
		{"be", append([]byte{0xfe, 0xff}, encodeUTF16(text, true)...), EncodingUTF16BE, text},
		{"odd final byte", append(append([]byte{0xff, 0xfe}, encodeUTF16("{}", false)...), 'x'), EncodingUTF16LE, "{}\uFFFD"},
		{"lone high surrogate", append(append([]byte{0xff, 0xfe}, encodeUTF16("[", false)...), 0x3d, 0xd8, '1', 0), EncodingUTF16LE, "[\uFFFD1"},
		{"lone low surrogate", append(append([]byte{0xff, 0xfe}, encodeUTF16("[", false)...), 0x00, 0xdc), EncodingUTF16LE, "[\uFFFD"},
		{"utf-8 bom", append([]byte{0xef, 0xbb, 0xbf}, text...), EncodingUTF8BOM, text},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := encodingOf(c.in); got != c.enc {
				t.Fatalf("encoding %v, want %v", got, c.enc)
			}
			for _, split := range []struct {
				name string
				wrap func(io.Reader) io.Reader
			}{{"whole", func(r io.Reader) io.Reader { return r }}, {"byte by byte", iotest.OneByteReader}, {"half", iotest.HalfReader}} {
				r, err := decodeText(split.wrap(bytes.NewReader(c.in)), c.enc)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(iotest.OneByteReader(r))
				if err != nil || string(got) != c.want {
					t.Errorf("%s: %q, %v; want %q", split.name, got, err, c.want)
				}
			}
		})
	}
	// A 0xff 0xfe start that is not followed by text is binary, not UTF-16.
	if got := encodingOf([]byte{0xff, 0xfe, 0x01, 0x02}); got != EncodingUTF8 {
		t.Errorf("binary taken for %v", got)
	}
}
