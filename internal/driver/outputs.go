package driver

import (
	"bufio"
	"strings"

	"github.com/llmprof/llmprof/export"
	"github.com/llmprof/llmprof/internal/outfile"
	"github.com/llmprof/llmprof/report"
)

// WriteTokens writes analyze --tokens: one row per output token, as JSON
// Lines when path ends in .jsonl, else CSV (written whole, then renamed into
// place).
func WriteTokens(path string, a *Result) error {
	jsonl := strings.HasSuffix(path, ".jsonl")
	return outfile.Write(path, outfile.Options{}, func(w *bufio.Writer) error { return report.WriteTokens(w, a.Attr, jsonl) })
}

// WriteRequests writes analyze --requests: the per-request table in the
// format the file's extension names (.parquet, partitioned as export
// --parquet is; .jsonl; otherwise CSV).
func WriteRequests(path string, inputs []string, a *Result) error {
	rows := report.RequestRows(a.Attr)
	if strings.HasSuffix(path, ".parquet") {
		return export.WriteRequestsParquet(path, rows, ParquetPartition(inputs, a, "", ""))
	}
	jsonl := strings.HasSuffix(path, ".jsonl")
	return outfile.Write(path, outfile.Options{}, func(w *bufio.Writer) error { return report.WriteRequests(w, rows, jsonl) })
}
