package ingest

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGzipReader(t *testing.T) {
	one, two := gz(t, "first member\n"), gz(t, "second member\n")
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name    string
		in      []byte
		want    string
		wantErr string
	}{
		{"one member", one, "first member\n", ""},
		{"concatenated members", cat(one, two), "first member\nsecond member\n", ""},
		{"trailing zeros", cat(one, make([]byte, 4096)), "first member\n", ""},
		{"members then zeros", cat(one, two, make([]byte, 511)), "first member\nsecond member\n", ""},
		{"garbage after the member", cat(one, []byte{0, 0, 'x'}), "first member\n", "2 bytes of padding, then data that is not a gzip member"},
		{"truncated member", one[:len(one)-4], "", "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zr, err := NewGzipReader(bytes.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			}
			if tc.wantErr == "" && string(got) != tc.want {
				t.Errorf("read %q, want %q", got, tc.want)
			}
			if tc.name == "garbage after the member" && string(got) != tc.want {
				t.Errorf("the complete member before the garbage: read %q, want %q", got, tc.want)
			}
		})
	}
}
