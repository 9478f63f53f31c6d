package report

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown renders the report as Markdown for a pull request, an issue
// or a wiki page: the findings as a numbered list linking to their sections,
// then every section (Sections' order) under its own heading, its tables and
// bars as the terminal renders them without colour, in a fixed-width block
// (heat maps and bars do not survive Markdown tables).
func (r *Report) WriteMarkdown(w io.Writer) error {
	st := newStyles(io.Discard, false)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", mdEscape(r.title()))
	if r.Unrelated != "" {
		fmt.Fprintf(&b, "\n> **Note** %s\n", mdEscape(r.Unrelated))
	}
	for _, sec := range r.Sections() {
		title := sec.Title
		if sec.ID == secWarnings.ID {
			title = fmt.Sprintf("%s (%d)", title, warningCount(r))
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		if sec.ID == secFindings.ID {
			for i, f := range r.Headline {
				t := sectionTitle(f.Section)
				fmt.Fprintf(&b, "%d. %s ([%s](#%s))\n", i+1, mdEscape(f.Text), t, mdAnchor(t))
			}
			continue
		}
		var body strings.Builder
		r.textSection(&body, st, sec.ID, 100)
		text := strings.TrimLeft(body.String(), "\n")
		// The text heading repeats the Markdown one; what follows it on its
		// line (the section's summary) becomes the section's first line.
		first, rest, _ := strings.Cut(text, "\n")
		if head := strings.ToUpper(sec.Title); strings.HasPrefix(first, head) {
			if sub := strings.TrimSpace(strings.TrimPrefix(first, head)); sub != "" && !strings.HasPrefix(sub, "(") {
				fmt.Fprintf(&b, "%s\n\n", mdEscape(sub))
			}
			text = rest
		}
		if strings.TrimSpace(text) == "" {
			if sec.ID == secWarnings.ID {
				b.WriteString("none\n")
			}
			continue
		}
		fmt.Fprintf(&b, "```text\n%s\n```\n", strings.TrimRight(text, "\n"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdAnchor is the anchor GitHub gives a heading: lower case, spaces as
// hyphens, punctuation dropped.
func mdAnchor(title string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(title) {
		switch {
		case c == ' ':
			b.WriteByte('-')
		case c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteRune(c)
		}
	}
	return b.String()
}
