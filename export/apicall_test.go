package export

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// A failed CUDA API call's return code is an argument of its slice, as the
// cuda.return_value attribute of the nsys decoder was; a successful call's
// slice carries only its correlation ID.
func TestPerfettoCallReturnCode(t *testing.T) {
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: "report.sqlite"}}
	name := tr.Strings.Intern("cudaStreamQuery")
	tr.APICalls = []ingest.APICall{
		{Name: name, Start: 1_000, End: 2_000, Pid: 7, Tid: 8, Correlation: 3, Origin: ingest.OriginCUDARuntime},
		{Name: name, Start: 3_000, End: 4_000, Pid: 7, Tid: 8, Correlation: 4, Return: 600, Origin: ingest.OriginCUDARuntime},
	}
	out, _ := export(t, tr, PerfettoOptions{})
	var p parsed
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	var args []map[string]any
	for _, e := range p.TraceEvents {
		if e.Ph == "X" && e.Cat == "cuda_runtime" {
			args = append(args, e.Args)
		}
	}
	if len(args) != 2 || len(args[0]) != 1 || args[0]["correlation"] != json.Number("3") ||
		len(args[1]) != 2 || args[1][ingest.APIReturnKey] != json.Number("600") {
		t.Fatalf("call slices' args %v, want the correlation and, on the failed call, cuda.return_value 600", args)
	}
}
