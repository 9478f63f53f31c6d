package report

import (
	"io"
	"strings"
)

// AnalysisSection is the part of the report of an analysis registered in
// internal/driver/analyses.go that the report has no field for: its result
// under ID in the JSON report's "analyses" object, and a section titled
// Title, after the built-in ones, that text, Markdown and HTML show as Text
// writes it.
type AnalysisSection struct {
	ID, Title string
	// Result is what the JSON report holds under analyses.<ID>.
	Result any
	// Text writes the section's lines without its heading, each indented by
	// two spaces as every section's are.
	Text func(w io.Writer) error
}

// analysisSection is the registered analysis's section with the id, or nil.
func (r *Report) analysisSection(id string) *AnalysisSection {
	for i := range r.sections {
		if r.sections[i].ID == id {
			return &r.sections[i]
		}
	}
	return nil
}

// analysisText writes a registered analysis's section as text (Markdown and
// HTML show the same text): its heading, then its lines, or the error that
// writing them met.
func analysisText(b *strings.Builder, st styles, s *AnalysisSection) {
	b.WriteString("\n" + st.section.Render(strings.ToUpper(s.Title)) + "\n")
	if err := s.Text(b); err != nil {
		b.WriteString("  " + st.warn.Render(err.Error()) + "\n")
	}
}
