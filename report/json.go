package report

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the report as indented JSON with "schema":
// "llmprof.report/v1". Unknown metrics are null, never 0.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
