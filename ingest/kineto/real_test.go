package kineto

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// realFiles returns the real Kineto traces in the shared test data.
func realFiles(t *testing.T) []string {
	return shareddata.Glob(t, "testdata/kineto/*.json.gz")
}

var (
	decodedMu sync.Mutex
	decoded   = map[string]*ingest.Trace{}
)

// decodeReal decodes a real trace once per test binary, the way ingest.Open
// does (NewInput undoes the gzip, Sniff must take it).
func decodeReal(t *testing.T, path string) *ingest.Trace {
	t.Helper()
	decodedMu.Lock()
	defer decodedMu.Unlock()
	if tr, ok := decoded[path]; ok {
		return tr
	}
	in, err := ingest.NewInput(path)
	if err != nil {
		t.Fatal(err)
	}
	if !(Decoder{}).Sniff(in) {
		t.Fatalf("%s: Sniff does not take a real Kineto trace", path)
	}
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: path}}
	if err := (Decoder{}).Decode(context.Background(), in, tr); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	tr.Validate()
	decoded[path] = tr
	return tr
}

// nameStats is an independent per-name summary: count, total, min and max
// duration in ns.
type nameStats struct {
	Count           int
	Total, Min, Max int64
}

func (s *nameStats) add(d int64) {
	if s.Count == 0 || d < s.Min {
		s.Min = d
	}
	if s.Count == 0 || d > s.Max {
		s.Max = d
	}
	s.Count++
	s.Total += d
}

// jsonCount is what encoding/json, knowing nothing of the decoder, finds in
// a trace.
type jsonCount struct {
	kernels       map[string]*nameStats
	memcpy        int
	memcpyBytes   int64
	memset        int
	memsetBytes   int64
	syncs         int
	runtime       map[string]int
	driver        map[string]int
	cpuOps        int
	annotations   int
	gpuAnnot      int
	python        int
	firstKernelNs int64 // absolute
	base          int64
	matchedOps    int    // GPU ops whose correlation a runtime/driver call carries
	host          string // the top-level host_name
}

// nsOf converts a µs JSON number to ns exactly, with big.Rat: another
// route than the decoder's decimal parser.
func nsOf(t *testing.T, n json.Number) int64 {
	r, ok := new(big.Rat).SetString(n.String())
	if !ok {
		t.Fatalf("not a number: %s", n)
	}
	r.Mul(r, big.NewRat(1000, 1))
	f, _ := r.Float64()
	q := new(big.Int).Quo(r.Num(), r.Denom())
	if f < 0 {
		t.Fatalf("negative time %s", n)
	}
	rem := new(big.Rat).Sub(r, new(big.Rat).SetInt(q))
	if rem.Cmp(big.NewRat(1, 2)) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// openReal opens a real trace as ingest would (decompressed), for reading
// it independently of the decoder; the file is closed with the test.
func openReal(t *testing.T, path string) io.Reader {
	t.Helper()
	in, err := ingest.NewInput(path)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := in.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

var (
	countedMu sync.Mutex
	counted   = map[string]jsonCount{}
)

// countJSON reads a real trace with encoding/json, independently of the
// decoder, once per test binary (TestRealFilesCounts and TestRealFilesHost
// read the same count).
func countJSON(t *testing.T, path string) jsonCount {
	t.Helper()
	countedMu.Lock()
	defer countedMu.Unlock()
	if c, ok := counted[path]; ok {
		return c
	}
	rc := openReal(t, path)
	dec := json.NewDecoder(rc)
	dec.UseNumber()
	// Each event's fields as encoding/json's own values (UseNumber), the
	// reading a map[string]any of every event and its args gave at 1.6×
	// the CPU (no real trace has two keys differing only in case, which
	// struct fields would match alike).
	var doc struct {
		TraceEvents []struct {
			Ph, Name, Cat, Ts, Dur any
			Args                   struct{ Correlation, Bytes any }
		} `json:"traceEvents"`
		Base     json.Number `json:"baseTimeNanoseconds"`
		HostName string      `json:"host_name"`
	}
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	c := jsonCount{kernels: map[string]*nameStats{}, runtime: map[string]int{}, driver: map[string]int{}, firstKernelNs: -1, host: doc.HostName}
	if doc.Base != "" {
		c.base, _ = doc.Base.Int64()
	}
	apiCorr := map[string]bool{}
	var opCorr []string
	for _, e := range doc.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		name, _ := e.Name.(string)
		cat, _ := e.Cat.(string)
		corr := ""
		if v, ok := e.Args.Correlation.(json.Number); ok {
			corr = v.String()
		}
		switch cat {
		case "kernel":
			dur, ts := nsOf(t, e.Dur.(json.Number)), nsOf(t, e.Ts.(json.Number))
			s := c.kernels[name]
			if s == nil {
				s = &nameStats{}
				c.kernels[name] = s
			}
			s.add(dur)
			if abs := c.base + ts; c.firstKernelNs < 0 || abs < c.firstKernelNs {
				c.firstKernelNs = abs
			}
			opCorr = append(opCorr, corr)
		case "gpu_memcpy":
			c.memcpy++
			b, _ := numberArg(e.Args.Bytes)
			c.memcpyBytes += b
			opCorr = append(opCorr, corr)
		case "gpu_memset":
			c.memset++
			b, _ := numberArg(e.Args.Bytes)
			c.memsetBytes += b
			opCorr = append(opCorr, corr)
		case "cuda_sync":
			c.syncs++
			opCorr = append(opCorr, corr)
		case "cuda_runtime":
			c.runtime[name]++
			apiCorr[corr] = true
		case "cuda_driver":
			c.driver[name]++
			apiCorr[corr] = true
		case "cpu_op":
			c.cpuOps++
		case "user_annotation":
			c.annotations++
		case "gpu_user_annotation":
			c.gpuAnnot++
		case "python_function":
			c.python++
		}
	}
	for _, corr := range opCorr {
		if corr != "" && corr != "0" && apiCorr[corr] {
			c.matchedOps++
		}
	}
	counted[path] = c
	return c
}

// TestRealFilesCounts checks the decoded model against an independent
// count of each real trace's JSON: kernels by name (instances, total,
// min, max), memcpy and memset counts and bytes, syncs, runtime and driver
// calls by name, CPU ops and annotations, and the launch join.
func TestRealFilesCounts(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			want := countJSON(t, path)

			kernels := map[string]*nameStats{}
			var memcpy, memset, syncs int
			var memcpyBytes, memsetBytes int64
			firstKernel := int64(-1)
			for i := range tr.GPUOps {
				o := &tr.GPUOps[i]
				switch o.Kind {
				case ingest.OpKernel:
					s := kernels[tr.Str(o.Name)]
					if s == nil {
						s = &nameStats{}
						kernels[tr.Str(o.Name)] = s
					}
					s.add(o.Duration())
					if firstKernel < 0 || o.Start < firstKernel {
						firstKernel = o.Start
					}
				case ingest.OpMemcpy:
					memcpy++
					memcpyBytes += int64(tr.ShapeOf(o).Bytes)
				case ingest.OpMemset:
					memset++
					memsetBytes += int64(tr.ShapeOf(o).Bytes)
				case ingest.OpSync:
					syncs++
				}
			}
			if len(kernels) != len(want.kernels) {
				t.Errorf("%d kernel names, JSON has %d", len(kernels), len(want.kernels))
			}
			for name, w := range want.kernels {
				if g := kernels[name]; g == nil || *g != *w {
					t.Errorf("kernel %.60q: got %+v, JSON %+v", name, g, *w)
				}
			}
			if memcpy != want.memcpy || memcpyBytes != want.memcpyBytes {
				t.Errorf("memcpy: %d ops %d B, JSON %d ops %d B", memcpy, memcpyBytes, want.memcpy, want.memcpyBytes)
			}
			if memset != want.memset || memsetBytes != want.memsetBytes {
				t.Errorf("memset: %d ops %d B, JSON %d ops %d B", memset, memsetBytes, want.memset, want.memsetBytes)
			}
			if syncs != want.syncs {
				t.Errorf("syncs: %d, JSON %d", syncs, want.syncs)
			}
			if firstKernel != want.firstKernelNs {
				t.Errorf("first kernel at %d ns, JSON says %d", firstKernel, want.firstKernelNs)
			}

			runtime, driver := map[string]int{}, map[string]int{}
			var cpuOps, annotations, gpuAnnot, python int
			for i := range tr.APICalls {
				c := &tr.APICalls[i]
				switch c.Origin {
				case ingest.OriginCUDARuntime:
					runtime[tr.Str(c.Name)]++
				case ingest.OriginCUDADriver:
					driver[tr.Str(c.Name)]++
				default:
					t.Errorf("call %q of origin %s", tr.Str(c.Name), c.Origin)
				}
			}
			for i := range tr.Spans {
				s := &tr.Spans[i]
				switch s.Origin {
				case ingest.OriginCUDARuntime, ingest.OriginCUDADriver:
					t.Errorf("span %q is an API call", tr.Str(s.Name))
				case ingest.OriginCPUOp:
					if _, ok := tr.AttrString(tr.SpanAttrs(s), AttrCategory); ok {
						python++
					} else {
						cpuOps++
					}
				case ingest.OriginNVTX:
					annotations++
				case ingest.OriginGPUAnnotation:
					gpuAnnot++
				}
			}
			if !mapsEqual(runtime, want.runtime) {
				t.Errorf("runtime calls by name differ:\n got  %v\n json %v", runtime, want.runtime)
			}
			if !mapsEqual(driver, want.driver) {
				t.Errorf("driver calls by name differ:\n got  %v\n json %v", driver, want.driver)
			}
			if cpuOps != want.cpuOps || annotations != want.annotations || gpuAnnot != want.gpuAnnot || python != want.python {
				t.Errorf("cpu_op %d, user_annotation %d, gpu_user_annotation %d, python_function %d; JSON %d, %d, %d, %d",
					cpuOps, annotations, gpuAnnot, python, want.cpuOps, want.annotations, want.gpuAnnot, want.python)
			}
			matched := 0
			for _, c := range tr.LaunchCalls() {
				if c >= 0 {
					matched++
				}
			}
			if matched != want.matchedOps {
				t.Errorf("%d GPU ops joined to their launch, JSON has %d with a matching correlation", matched, want.matchedOps)
			}
			t.Logf("%d kernels (%d names), %d memcpy, %d memset, %d syncs, %d runtime, %d driver, %d cpu_op, %d annotations; %d joined",
				countOps(kernels), len(kernels), memcpy, memset, syncs, sum(runtime), sum(driver), cpuOps, annotations, matched)
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func countOps(m map[string]*nameStats) int {
	n := 0
	for _, v := range m {
		n += v.Count
	}
	return n
}

// TestRealFilesWarnings pins the warnings each real trace deserves, and no
// others.
func TestRealFilesWarnings(t *testing.T) {
	want := map[string][]string{
		"hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz":                  {"no-gpu"},
		"hta-cupti_profiler-benchmark_result_924719_1679055439_trace.json.gz":         {"no-kernels"},
		"hta-critical_path-alexnet-benchmark_result_2869224_1695835535_trace.json.gz": nil,
		"hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz":        nil,
		"hta-trace_diff-control-control.json.gz":                                      nil,
		"hta-triton_example-triton_example.json.gz":                                   nil,
	}
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			var codes []string
			for _, w := range tr.Warnings.List {
				codes = append(codes, w.Code)
			}
			w, known := want[filepath.Base(path)]
			if !known {
				t.Skip("no expectation for this file")
			}
			if !slices.Equal(codes, w) {
				var msgs []string
				for _, x := range tr.Warnings.List {
					msgs = append(msgs, x.String())
				}
				t.Errorf("warnings %v, want %v:\n%s", codes, w, strings.Join(msgs, "\n"))
			}
		})
	}
}

func ExampleDecoder() {
	tr, err := Decoder{}.DecodeReader(context.Background(), strings.NewReader(`{"schemaVersion": 1,
  "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 10.5, "dur": 4.25, "args": {"correlation": 3}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 12.001, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 3, "grid": [4, 1, 1], "block": [128, 1, 1]}}
  ],
  "baseTimeNanoseconds": 1700000000000000000}`), "example.pt.trace.json")
	if err != nil {
		panic(err)
	}
	k := tr.GPUOps[0]
	fmt.Println(tr.Str(k.Name), k.Start, k.Duration(), k.Pid, tr.ShapeOf(&k).Grid[0], tr.ShapeOf(&k).Block[0], tr.LaunchCalls()[0])
	// Output: gemm 1700000000000012001 20000 7 4 128 0
}

// A real trace's host_name becomes Source.Host as the nsys decoder turns an
// export's Hostname into it (an independent SHA-256 here, of the host_name
// encoding/json read: countJSON), and a trace without one has no host.
func TestRealFilesHost(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := ""
			if host := countJSON(t, path).host; host != "" {
				sum := sha256.Sum256([]byte(host))
				want = hex.EncodeToString(sum[:4])
			}
			if got := decodeReal(t, path).Sources[0].Host; got != want {
				t.Errorf("host %q, want %q", got, want)
			}
		})
	}
}

// numberArg reads an integer argument that a trace may leave out (ROCm
// traces carry no "bytes" on memcpy and memset).
func numberArg(arg any) (int64, bool) {
	v, ok := arg.(json.Number)
	if !ok {
		return 0, false
	}
	n, err := v.Int64()
	return n, err == nil
}
