package ingest

import (
	"bytes"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// Encoding is the text encoding of an input, as its byte-order mark says.
// JSON decoders read UTF-8 only; Open converts the others.
type Encoding uint8

const (
	// EncodingUTF8 is UTF-8 (or binary) without a byte-order mark.
	EncodingUTF8 Encoding = iota
	// EncodingUTF8BOM is UTF-8 after a byte-order mark, which Open drops.
	EncodingUTF8BOM
	// EncodingUTF16LE and EncodingUTF16BE are UTF-16 after a byte-order mark
	// (what Windows PowerShell's Out-File and `>` write), which Open
	// transcodes to UTF-8.
	EncodingUTF16LE
	EncodingUTF16BE
)

func (e Encoding) String() string {
	switch e {
	case EncodingUTF8BOM:
		return "UTF-8 with a byte-order mark"
	case EncodingUTF16LE:
		return "UTF-16LE"
	case EncodingUTF16BE:
		return "UTF-16BE"
	}
	return "UTF-8"
}

var (
	bomUTF8    = []byte{0xef, 0xbb, 0xbf}
	bomUTF16LE = []byte{0xff, 0xfe}
	bomUTF16BE = []byte{0xfe, 0xff}
)

// encodingOf reads the byte-order mark, if any. A UTF-16 mark counts only
// when text follows it ("{" or "[" after white space, or nothing): 0xff 0xfe
// could start a binary file too.
func encodingOf(head []byte) Encoding {
	switch {
	case bytes.HasPrefix(head, bomUTF8):
		return EncodingUTF8BOM
	case bytes.HasPrefix(head, bomUTF16LE) && utf16Text(head[2:], false):
		return EncodingUTF16LE
	case bytes.HasPrefix(head, bomUTF16BE) && utf16Text(head[2:], true):
		return EncodingUTF16BE
	}
	return EncodingUTF8
}

// utf16Text reports whether b starts with ASCII white space then "{" or "["
// in UTF-16, or is empty.
func utf16Text(b []byte, big bool) bool {
	for i := 0; i+1 < len(b); i += 2 {
		lo, hi := b[i], b[i+1]
		if big {
			lo, hi = hi, lo
		}
		if hi != 0 {
			return false
		}
		switch lo {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return true
}

// decodeText returns a reader of r's content as UTF-8 without a byte-order
// mark.
func decodeText(r io.Reader, e Encoding) (io.Reader, error) {
	switch e {
	case EncodingUTF8BOM:
		if _, err := io.ReadFull(r, make([]byte, len(bomUTF8))); err != nil {
			return nil, err
		}
		return r, nil
	case EncodingUTF16LE, EncodingUTF16BE:
		if _, err := io.ReadFull(r, make([]byte, 2)); err != nil {
			return nil, err
		}
		return &utf16Reader{r: r, big: e == EncodingUTF16BE, in: make([]byte, 0, 32<<10)}, nil
	}
	return r, nil
}

// utf16Reader transcodes UTF-16 to UTF-8 as it streams. An unpaired
// surrogate or a final odd byte becomes U+FFFD, as encoding/json would make
// of it.
type utf16Reader struct {
	r   io.Reader
	big bool
	in  []byte // undecoded input (an odd byte, a high surrogate) and room to read
	out []byte // decoded output not yet returned
	err error
}

func (u *utf16Reader) Read(p []byte) (int, error) {
	for len(u.out) == 0 {
		if u.err != nil {
			return 0, u.err
		}
		n, err := u.r.Read(u.in[len(u.in):cap(u.in)])
		u.in = u.in[:len(u.in)+n]
		if err != nil {
			u.err = err
		}
		u.decode(err != nil)
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	return n, nil
}

// decode turns the complete code units of u.in into UTF-8; at the end it
// flushes what is left.
func (u *utf16Reader) decode(final bool) {
	out := u.out[:0]
	in := u.in
	unit := func(i int) rune {
		if u.big {
			return rune(in[i])<<8 | rune(in[i+1])
		}
		return rune(in[i+1])<<8 | rune(in[i])
	}
	i := 0
	for ; i+1 < len(in); i += 2 {
		c := unit(i)
		switch {
		case utf16.IsSurrogate(c) && c < 0xdc00:
			if i+3 >= len(in) {
				if !final {
					goto keep // wait for the low surrogate
				}
				out = utf8.AppendRune(out, utf8.RuneError)
				continue
			}
			if r := utf16.DecodeRune(c, unit(i+2)); r != utf8.RuneError {
				out = utf8.AppendRune(out, r)
				i += 2
				continue
			}
			out = utf8.AppendRune(out, utf8.RuneError)
		case utf16.IsSurrogate(c):
			out = utf8.AppendRune(out, utf8.RuneError)
		default:
			out = utf8.AppendRune(out, c)
		}
	}
keep:
	rest := copy(in, in[i:])
	u.in = in[:rest]
	if final && rest > 0 {
		out = utf8.AppendRune(out, utf8.RuneError)
		u.in = u.in[:0]
	}
	u.out = out
}
