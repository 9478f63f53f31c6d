package main

import (
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/report"
	"golang.org/x/term"
)

// textWidth is the width the terminal report fits: $COLUMNS when set (so a
// pipe or a test can ask for a width), else the terminal's width when Out is
// one, else 0 (no limit: a file has no width).
func textWidth(ios *IOStreams, tty bool) int {
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && v > 0 {
		return v
	}
	if !tty {
		return 0
	}
	if f, ok := ios.Out.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// textOptions is how text goes to w: coloured on a terminal, and fitted to
// the terminal's width when w is standard output (a file keeps its lines).
func textOptions(ios *IOStreams, w io.Writer, tty bool) report.TextOptions {
	width := 0
	if w == ios.Out {
		width = textWidth(ios, tty)
	}
	return report.TextOptions{Color: report.ColorFor(tty), Width: width}
}
