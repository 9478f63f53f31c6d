// Package iostreams are the standard streams of llmprof's commands
// (cmd/llmprof): where data, progress and warnings go, whether each is a
// terminal and how wide, and terminals made safe from input-provided names.
package iostreams

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/llmprof/llmprof/internal/outfile"
	"github.com/llmprof/llmprof/internal/termsafe"
)

// IOStreams are the command's standard streams. Data goes to Out, progress
// and warnings to ErrOut. Tests substitute buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// OutTTY and ErrTTY say whether Out and ErrOut are terminals (colour,
	// progress bars).
	OutTTY, ErrTTY bool

	// raw are the streams before TerminalSafe made the terminals among them safe
	// (nil: the same as the fields): for the progress meter, which draws
	// with \r and erase-line, and for record's child, which owns its output.
	raw *IOStreams
}

// Raw returns the streams as they were before TerminalSafe.
func (s *IOStreams) Raw() *IOStreams {
	if s.raw != nil {
		return s.raw
	}
	return s
}

// TerminalSafe returns streams whose terminals print input-provided names
// with their control characters made visible (internal/termsafe), and a
// flush for what a last incomplete sequence left pending.
func (s *IOStreams) TerminalSafe() (*IOStreams, func()) {
	safe := *s
	safe.raw = s
	var ws []*termsafe.Writer
	if s.OutTTY {
		w := termsafe.New(s.Out)
		safe.Out, ws = w, append(ws, w)
	}
	if s.ErrTTY {
		w := termsafe.New(s.ErrOut)
		safe.ErrOut, ws = w, append(ws, w)
	}
	return &safe, func() {
		for _, w := range ws {
			w.Flush()
		}
	}
}

// System returns the process's standard streams.
func System() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// Width is the width text written to w fits: $COLUMNS when set (so a pipe
// or a test can ask for a width), else the terminal's width when w is Out
// and a terminal (tty), else 0 (no limit: a file has no width).
func (s *IOStreams) Width(w io.Writer, tty bool) int {
	if w != s.Out {
		return 0
	}
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && v > 0 {
		return v
	}
	if !tty {
		return 0
	}
	if f, ok := s.Out.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// WriteOutput runs render on Out (path "" or "-") or on the named file,
// written whole, then renamed into place, so a failed run never leaves half
// a report; tty says whether render writes to a terminal.
func (s *IOStreams) WriteOutput(path string, render func(w io.Writer, tty bool) error) error {
	if path == "" || path == "-" {
		return render(s.Out, s.OutTTY)
	}
	return WriteFile(path, func(w *bufio.Writer) error { return render(w, false) })
}

// WriteFile writes an output file the user named (-o, --tokens, --out,
// --perfetto): atomically when it is a file, in place when it is a device
// or pipe (internal/outfile).
func WriteFile(path string, write func(*bufio.Writer) error) error {
	return outfile.Write(path, outfile.Options{}, write)
}
