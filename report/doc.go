// Package report renders llmprof's results — the last stage of the pipeline
//
//	files ──► decoders ──► ingest.Trace ──► align ──► attribution ──► causal / compare ──► report
//
// as terminal text (lipgloss colour on a terminal, plain otherwise), JSON
// with a versioned schema, Markdown for pull-request comments and
// $GITHUB_STEP_SUMMARY, JUnit XML for CI test reporters, and HTML. Renderers
// format what the analysis computed; they never compute figures of their own.
package report
