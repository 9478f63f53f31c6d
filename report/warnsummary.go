package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// warningsShown is how many warnings the stderr summary quotes.
const warningsShown = 3

// WriteWarningSummary tells stderr (w) how many warnings the run produced,
// by kind, and quotes the first few, whatever the report's destination: with
// -o the report is in a file, and a skipped input must not go unnoticed.
func WriteWarningSummary(w io.Writer, ws []ingest.Warning) {
	if len(ws) == 0 {
		return
	}
	total := 0
	byCode := map[string]int{}
	for _, x := range ws {
		total += 1 + x.More
		byCode[x.Code] += 1 + x.More
	}
	codes := slices.Sorted(maps.Keys(byCode))
	slices.SortStableFunc(codes, func(a, b string) int { return cmp.Compare(byCode[b], byCode[a]) })
	var kinds []string
	for _, c := range codes {
		kinds = append(kinds, fmt.Sprintf("%d %s", byCode[c], c))
	}
	noun := "warnings"
	if total == 1 {
		noun = "warning"
	}
	fmt.Fprintf(w, "llmprof: %d %s (%s); the report lists them all\n", total, noun, strings.Join(kinds, ", "))
	for i, x := range ws {
		if i == warningsShown {
			fmt.Fprintf(w, "  … %d more\n", len(ws)-warningsShown)
			break
		}
		fmt.Fprintf(w, "  %s\n", x.String())
	}
}
