package iostreams

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWidth: $COLUMNS is the width of text to Out, a writer other than Out
// has none, and without $COLUMNS an Out that is no terminal file has none.
func TestWidth(t *testing.T) {
	var out, other bytes.Buffer
	s := &IOStreams{Out: &out}
	t.Setenv("COLUMNS", "77")
	if w := s.Width(&out, false); w != 77 {
		t.Errorf("$COLUMNS=77: width %d", w)
	}
	if w := s.Width(&other, true); w != 0 {
		t.Errorf("a writer other than Out: width %d", w)
	}
	t.Setenv("COLUMNS", "")
	if w := s.Width(&out, true); w != 0 {
		t.Errorf("no $COLUMNS, Out a buffer: width %d", w)
	}
}

// TestWriteOutput: no path (or -) renders to Out as a terminal if it is
// one; a path gets the whole file, rendered as no terminal.
func TestWriteOutput(t *testing.T) {
	var out bytes.Buffer
	s := &IOStreams{Out: &out, OutTTY: true}
	render := func(w io.Writer, tty bool) error {
		if tty {
			_, err := io.WriteString(w, "tty\n")
			return err
		}
		_, err := io.WriteString(w, "file\n")
		return err
	}
	if err := s.WriteOutput("-", render); err != nil || out.String() != "tty\n" {
		t.Errorf("-: %q, %v", out.String(), err)
	}
	path := filepath.Join(t.TempDir(), "report.txt")
	if err := s.WriteOutput(path, render); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "file\n" {
		t.Errorf("%s: %q, %v", path, b, err)
	}
}
