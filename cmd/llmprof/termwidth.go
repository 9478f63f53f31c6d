package main

import (
	"os"
	"strconv"
	"strings"

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
