package main

import (
	"io"
	"os"

	"golang.org/x/term"
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
}

// SystemIO returns the process's standard streams.
func SystemIO() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		OutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}
