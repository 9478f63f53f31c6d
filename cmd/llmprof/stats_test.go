package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/golden"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/nsys"
)

// Golden text and CSV output of every report on the NVIDIA/Fuser export
// (BSD-licensed), whose figures the reference doc lists.
func TestStatsGolden(t *testing.T) {
	file := shareddata.Path(t, "testdata/nsys/nvidia-fuser-report1-nsys2025.1.1.sqlite")
	for _, r := range nsys.Reports() {
		for _, format := range []string{"text", "csv"} {
			t.Run(r.Name+"/"+format, func(t *testing.T) {
				code, out, errOut := runLLMProf(t, "stats", r.Name, "--format", format, file)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				golden.Check(t, filepath.Join("testdata", "stats", r.Name+"."+format), []byte(strings.ReplaceAll(out, file, "report1.sqlite")))
			})
		}
	}
}

func TestStatsJSON(t *testing.T) {
	file := shareddata.Path(t, "testdata/nsys/nvidia-fuser-report1-nsys2025.1.1.sqlite")
	code, out, errOut := runLLMProf(t, "stats", "cuda_gpu_kern_sum:base", "--format", "json", file, file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Schema string `json:"schema"`
		Report string `json:"report"`
		Files  []struct {
			Path string           `json:"path"`
			Rows []map[string]any `json:"rows"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	if doc.Schema != "llmprof.stats/v1" || doc.Report != "cuda_gpu_kern_sum" || len(doc.Files) != 2 {
		t.Fatalf("document %+v", doc)
	}
	rows := doc.Files[0].Rows
	// 13 distinct short names (the reference doc's count).
	if len(rows) != 13 {
		t.Errorf("%d rows by short name, want 13", len(rows))
	}
	if rows[0]["Name"] != "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN" || rows[0]["Total Time (ns)"] != float64(2187752) || rows[0]["Time (%)"] != 21.5 {
		t.Errorf("first row %v", rows[0])
	}
}

func TestStatsErrors(t *testing.T) {
	notExport := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notExport, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no file", []string{"stats", "nvtx_sum"}, ExitUsage, "stats: missing REPORT and FILE"},
		{"unknown report", []string{"stats", "gpukernsum", notExport}, ExitUsage, `unknown report "gpukernsum"`},
		{"option on a report without kernels", []string{"stats", "nvtx_sum:base", notExport}, ExitUsage, "report nvtx_sum takes no option"},
		{"unknown option", []string{"stats", "cuda_gpu_kern_sum:short", notExport}, ExitUsage, `unknown option "short"`},
		{"unknown format", []string{"stats", "nvtx_sum", "--format", "xml", notExport}, ExitUsage, `unknown --format "xml"`},
		{"not an export", []string{"stats", "nvtx_sum", notExport}, ExitError, notExport + ": not an SQLite database"},
		{"missing file", []string{"stats", "nvtx_sum", notExport + ".nope"}, ExitError, notExport + ".nope"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := runLLMProf(t, c.args...)
			if code != c.code || !strings.Contains(errOut, c.msg) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, c.code, c.msg)
			}
		})
	}
}

func TestStatsHelpListsReports(t *testing.T) {
	code, out, _ := runLLMProf(t, "stats", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, r := range nsys.Reports() {
		if !strings.Contains(out, r.Name) {
			t.Errorf("help does not list %s", r.Name)
		}
	}
	if !strings.Contains(out, "llmprof stats cuda_gpu_kern_sum report1.sqlite") {
		t.Errorf("help has no example:\n%s", out)
	}
}

// -o writes the same bytes as stdout, into the named file.
func TestStatsOutputFile(t *testing.T) {
	file := shareddata.Path(t, "testdata/nsys/nvidia-fuser-report1-nsys2025.1.1.sqlite")
	_, want, _ := runLLMProf(t, "stats", "cuda_api_sum", "--format", "csv", file)
	out := filepath.Join(t.TempDir(), "api.csv")
	code, stdout, errOut := runLLMProf(t, "stats", "cuda_api_sum", "--format", "csv", "-o", out, file)
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, stdout, errOut)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want || want == "" {
		t.Errorf("-o wrote %d bytes, stdout had %d", len(got), len(want))
	}
}
