package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/export"
	"github.com/llmprof/llmprof/ingest"
)

// readParquet reads a whole Parquet file as an Arrow table.
func readParquet(t *testing.T, path string) arrow.Table {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	t.Cleanup(tbl.Release)
	return tbl
}

func column(t *testing.T, tbl arrow.Table, name string) *arrow.Chunked {
	t.Helper()
	idx := tbl.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("no column %q in %v", name, tbl.Schema())
	}
	return tbl.Column(idx[0]).Data()
}

// TestExportParquetDemo exports testdata/demo and reads every table back:
// row counts agree with the export's summary and the input, every table leads
// with the partition columns, and each token's buckets sum to its interval.
func TestExportParquetDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runLLMProf(t, "export", "--parquet", dir, "--run-id", "r1", filepath.Join("..", "..", "testdata", "demo"))
	if code != ExitOK {
		t.Fatalf("export exited %d: %s", code, stderr)
	}
	demo := committedDemo(t)
	if !strings.Contains(stderr, fmt.Sprintf("requests %d, tokens %d", demo.Requests, demo.Tokens)) {
		t.Errorf("summary line: %s", stderr)
	}
	want := map[string]int64{"requests": int64(demo.Requests), "tokens": int64(demo.Tokens), "gpu_ops": int64(demo.GPUOps), "alignment": 2}
	for _, name := range export.ParquetTables {
		tbl := readParquet(t, filepath.Join(dir, name+".parquet"))
		if n, ok := want[name]; ok && tbl.NumRows() != n {
			t.Errorf("%s: %d rows, want %d", name, tbl.NumRows(), n)
		}
		if tbl.NumRows() == 0 {
			t.Errorf("%s is empty", name)
		}
		for i, c := range []string{"run_id", "host", "date"} {
			if got := tbl.Schema().Field(i).Name; got != c {
				t.Errorf("%s: column %d is %q, want %q", name, i, got, c)
			}
		}
		runID := column(t, tbl, "run_id").Chunk(0).(*array.String)
		host := column(t, tbl, "host").Chunk(0).(*array.String)
		if runID.Value(0) != "r1" || host.IsNull(0) || host.Value(0) != ingest.HostID("gpu-node-1") {
			t.Errorf("%s: run_id %q, host %q; want r1 on gpu-node-1's identity (the reference clock's host)", name, runID.Value(0), host.ValueStr(0))
		}
		if column(t, tbl, "date").NullN() != 0 {
			t.Errorf("%s: null dates on a wall-clock run", name)
		}
	}
	tokens := readParquet(t, filepath.Join(dir, "tokens.parquet"))
	interval := column(t, tokens, "interval_ns")
	var bucketCols []*arrow.Chunked
	for _, f := range tokens.Schema().Fields() {
		if strings.HasSuffix(f.Name, "_ns") && f.Name != "interval_ns" && f.Name != "emitted_at_ns" {
			bucketCols = append(bucketCols, column(t, tokens, f.Name))
		}
	}
	if len(bucketCols) != int(attribution.NumBuckets) {
		t.Fatalf("%d bucket columns, want one per token bucket (%d)", len(bucketCols), attribution.NumBuckets)
	}
	bad := 0
	for ci, chunk := range interval.Chunks() {
		iv := chunk.(*array.Int64)
		for r := 0; r < iv.Len(); r++ {
			var sum int64
			for _, b := range bucketCols {
				sum += b.Chunk(ci).(*array.Int64).Value(r)
			}
			if sum != iv.Value(r) {
				bad++
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d tokens whose buckets do not sum to their interval", bad)
	}
	req := readParquet(t, filepath.Join(dir, "requests.parquet"))
	if n := column(t, req, "ttft_ms").NullN(); n != 0 {
		t.Errorf("%d requests without TTFT in the demo", n)
	}
}
