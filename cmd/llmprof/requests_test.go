package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/llmprof/llmprof/report"
)

// TestAnalyzeRequestsTable writes `analyze --requests` of testdata/demo as
// CSV, JSON Lines and Parquet: each has one row per request with the
// documented columns, the three agree, and every request's stages sum to its
// E2E.
func TestAnalyzeRequestsTable(t *testing.T) {
	dir := t.TempDir()
	demo := filepath.Join("..", "..", "testdata", "demo")
	paths := map[string]string{}
	for _, ext := range []string{"csv", "jsonl", "parquet"} {
		paths[ext] = filepath.Join(dir, "requests."+ext)
		if code, _, stderr := runLLMProf(t, "analyze", "--requests", paths[ext], "-o", filepath.Join(dir, "report.txt"), demo); code != ExitOK {
			t.Fatalf("analyze --requests %s exited %d: %s", ext, code, stderr)
		}
	}
	cols := report.RequestColumns()

	// CSV.
	f, err := os.Open(paths["csv"])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], cols) {
		t.Fatalf("CSV header %v, want %v", recs[0], cols)
	}
	recs = recs[1:]
	if want := committedDemo(t).Requests; len(recs) != want {
		t.Fatalf("%d CSV rows, want the demo's %d requests", len(recs), want)
	}
	idx := func(name string) int { return slices.Index(cols, name) }
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return v
	}
	ids := map[string]bool{}
	prevArrival := int64(math.MinInt64)
	for _, r := range recs {
		ids[r[0]] = true
		var stages float64
		for _, s := range []string{"tokenize", "queue", "prefill", "decode", "inference", "detokenize", "stream", "other"} {
			stages += num(r[idx("stage_"+s+"_ms")])
		}
		if e2e := num(r[idx("e2e_ms")]); math.Abs(stages-e2e) > 1e-6*e2e+1e-9 {
			t.Errorf("%s: stages sum to %g ms, E2E is %g", r[0], stages, e2e)
		}
		a, _ := strconv.ParseInt(r[idx("arrival_ns")], 10, 64)
		if a < prevArrival {
			t.Errorf("%s arrives before the row above it", r[0])
		}
		prevArrival = a
		if r[idx("kv_hit")] != "true" && r[idx("kv_hit")] != "false" {
			t.Errorf("%s: kv_hit %q (the demo reports the prefix cache)", r[0], r[idx("kv_hit")])
		}
	}
	if len(ids) != len(recs) {
		t.Errorf("%d distinct request ids", len(ids))
	}

	// JSON Lines: the same rows, values and order.
	jf, err := os.Open(paths["jsonl"])
	if err != nil {
		t.Fatal(err)
	}
	defer jf.Close()
	sc := bufio.NewScanner(jf)
	i := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if len(m) != len(cols) {
			t.Errorf("line %d has %d fields, want %d", i+1, len(m), len(cols))
		}
		if m["request_id"] != recs[i][0] || m["ttft_ms"].(float64) != num(recs[i][idx("ttft_ms")]) {
			t.Errorf("line %d: %v / %v differs from the CSV row %v", i+1, m["request_id"], m["ttft_ms"], recs[i][:6])
		}
		i++
	}
	if i != len(recs) {
		t.Errorf("%d JSON lines, %d CSV rows", i, len(recs))
	}

	// Parquet: same ids and TTFTs, plus the partition columns.
	tbl := readParquet(t, paths["parquet"])
	if tbl.NumRows() != int64(len(recs)) {
		t.Fatalf("%d Parquet rows, %d CSV rows", tbl.NumRows(), len(recs))
	}
	id := column(t, tbl, "request_id").Chunk(0).(*array.String)
	ttft := column(t, tbl, "ttft_ms").Chunk(0).(*array.Float64)
	for r := range recs {
		if id.Value(r) != recs[r][0] || ttft.Value(r) != num(recs[r][idx("ttft_ms")]) {
			t.Fatalf("Parquet row %d (%s, %g) differs from the CSV row", r, id.Value(r), ttft.Value(r))
		}
	}
}
