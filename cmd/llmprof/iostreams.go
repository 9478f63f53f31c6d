package main

import (
	"io"
	"os"

	"golang.org/x/term"

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

	// raw are the streams before Main made the terminals among them safe
	// (nil: the same as the fields): for the progress meter, which draws
	// with \r and erase-line, and for record's child, which owns its output.
	raw *IOStreams
}

// Raw returns the streams as they were handed to Main.
func (s *IOStreams) Raw() *IOStreams {
	if s.raw != nil {
		return s.raw
	}
	return s
}

// terminalSafe returns streams whose terminals print input-provided names
// with their control characters made visible (internal/termsafe), and a
// flush for what a last incomplete sequence left pending.
func (s *IOStreams) terminalSafe() (*IOStreams, func()) {
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

// SystemIO returns the process's standard streams.
func SystemIO() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}
