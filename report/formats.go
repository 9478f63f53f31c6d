package report

import (
	"io"
	"strings"

	"github.com/llmprof/llmprof/compare"
)

// DiffFormat is one output format of `llmprof diff`: the name --format and
// --out take (and its aliases), and its writer. DiffFormats is the one list
// that the help text, the validation and the renderers come from.
type DiffFormat struct {
	Name    string
	Aliases []string
	Write   func(w io.Writer, res *compare.Result, o DiffOptions) error
}

// DiffFormats are diff's output formats, in the order help lists them.
var DiffFormats = []DiffFormat{
	{Name: "text", Write: WriteDiffText},
	{Name: "markdown", Aliases: []string{"md"}, Write: WriteDiffMarkdown},
	{Name: "json", Write: func(w io.Writer, res *compare.Result, _ DiffOptions) error { return WriteDiffJSON(w, res) }},
	{Name: "junit", Write: func(w io.Writer, res *compare.Result, _ DiffOptions) error { return WriteDiffJUnit(w, res) }},
	{Name: "html", Write: WriteDiffHTML},
}

// FindDiffFormat returns the diff format a name or alias names.
func FindDiffFormat(name string) (DiffFormat, bool) {
	for _, f := range DiffFormats {
		if f.Name == name {
			return f, true
		}
		for _, a := range f.Aliases {
			if a == name {
				return f, true
			}
		}
	}
	return DiffFormat{}, false
}

// DiffFormatNames lists the diff formats' names for help and errors:
// "text, markdown, json, junit or html".
func DiffFormatNames() string {
	names := make([]string, len(DiffFormats))
	for i, f := range DiffFormats {
		names[i] = f.Name
	}
	return orList(names)
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
