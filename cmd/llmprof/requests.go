package main

import (
	"bufio"
	"strings"

	"github.com/llmprof/llmprof/export"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/report"
)

// writeRequests writes the per-request table in the format the file's
// extension names (.parquet, .jsonl, otherwise CSV).
func writeRequests(path string, inputs []string, a *driver.Result) error {
	rows := report.RequestRows(a.Attr)
	switch {
	case strings.HasSuffix(path, ".parquet"):
		return export.WriteRequestsParquet(path, rows, driver.ParquetPartition(inputs, a, "", ""))
	case strings.HasSuffix(path, ".jsonl"):
		return writeFileAtomic(path, func(w *bufio.Writer) error { return report.WriteRequests(w, rows, true) })
	}
	return writeFileAtomic(path, func(w *bufio.Writer) error { return report.WriteRequests(w, rows, false) })
}
