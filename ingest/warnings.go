package ingest

import (
	"fmt"
	"strconv"
)

// maxPerCode bounds how many warnings of one code from one file are kept; the
// rest are counted on the last one kept, so a million bad spans cost one line.
const maxPerCode = 10

// Warning is a non-fatal problem with the input, positioned as precisely as
// the format allows.
type Warning struct {
	Path string `json:"path,omitempty"`
	// Pos is the position in the file: "line 12", "record 3", "table X row 5".
	Pos string `json:"pos,omitempty"`
	// Code is a short stable identifier of the kind of problem.
	Code string `json:"code"`
	Msg  string `json:"message"`
	// More counts further warnings of the same code from the same file that
	// were suppressed after this one.
	More int `json:"more,omitempty"`
}

// String formats the warning as "path:pos: message (and N more like this)".
func (w Warning) String() string {
	s := w.Msg
	switch {
	case w.Path != "" && w.Pos != "":
		s = w.Path + ":" + w.Pos + ": " + s
	case w.Path != "":
		s = w.Path + ": " + s
	case w.Pos != "":
		s = w.Pos + ": " + s
	}
	if w.More > 0 {
		s += " (and " + strconv.Itoa(w.More) + " more like this)"
	}
	return s
}

// Warnings collects warnings, keeping at most a few per file and code.
type Warnings struct {
	List []Warning
	seen map[string]int // path\x00code → index of the last kept warning, or -1-count
	kept map[string]int
}

// Add records a warning.
func (ws *Warnings) Add(w Warning) {
	if ws.kept == nil {
		ws.kept = map[string]int{}
		ws.seen = map[string]int{}
	}
	key := w.Path + "\x00" + w.Code
	n := ws.kept[key]
	if n < maxPerCode {
		ws.kept[key] = n + 1
		ws.List = append(ws.List, w)
		ws.seen[key] = len(ws.List) - 1
		return
	}
	last := ws.seen[key]
	ws.List[last].More += 1 + w.More
}

// Addf records a warning with a formatted message.
func (ws *Warnings) Addf(path, pos, code, format string, args ...any) {
	ws.Add(Warning{Path: path, Pos: pos, Code: code, Msg: fmt.Sprintf(format, args...)})
}

// Len is the number of problems, suppressed ones included.
func (ws *Warnings) Len() int {
	n := 0
	for _, w := range ws.List {
		n += 1 + w.More
	}
	return n
}

// Warnf records a warning about source src of the trace.
func (t *Trace) Warnf(src SourceID, pos, code, format string, args ...any) {
	path := ""
	if int(src) < len(t.Sources) {
		path = t.Sources[src].Path
	}
	t.Warnings.Addf(path, pos, code, format, args...)
}
