package nsys

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// benchKernels is the size of the export the Go benchmarks decode; the
// 5 M- and 10 M-kernel runs are bench/nsys.sh's.
const benchKernels = 200_000

// benchFile writes an export of n kernels, each launched by a
// cudaLaunchKernel call, in steps of 256 under an NVTX range.
func benchFile(b testing.TB, n int) string {
	b.Helper()
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: "bench"}}
	names := make([]ingest.StrID, 16)
	for i := range names {
		names[i] = t.Strings.Intern(fmt.Sprintf("void ns::kernel_%d<float, 128, 64>(Params)", i))
	}
	launch := t.Strings.Intern("cudaLaunchKernel")
	now := int64(1_741_793_819_042_497_997)
	for i := 0; i < n; i++ {
		if i%256 == 0 {
			t.Spans = append(t.Spans, ingest.Span{Name: t.Strings.Intern(fmt.Sprintf("step %d", i/256)), Start: now, End: now + 256*3000,
				Pid: 1, Tid: 1, Origin: ingest.OriginNVTX, Resource: -1, Scope: -1})
		}
		corr := uint32(i + 1)
		t.APICalls = append(t.APICalls, ingest.APICall{Name: launch, Start: now, End: now + 1000, Pid: 1, Tid: 1, Correlation: corr,
			Origin: ingest.OriginCUDARuntime})
		t.GPUOps = append(t.GPUOps, ingest.GPUOp{Kind: ingest.OpKernel, Name: names[i%len(names)], ShortName: names[i%len(names)],
			Start: now + 1500, End: now + 1500 + int64(1000+i%777), Correlation: corr, Pid: 1, Stream: 7,
			Shape: t.InternShape(ingest.OpShape{Grid: [3]uint32{132, 1, 1}, Block: [3]uint16{256, 1, 1}})})
		now += 3000
	}
	t.Validate()
	path := filepath.Join(b.TempDir(), "bench.sqlite")
	if err := WriteSQLite(path, t, WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	return path
}

var (
	benchFilesMu sync.Mutex
	benchFiles   = map[int][]byte{}
)

// benchFileCopy is a copy of benchFile(n) of the test's own, which it may
// change: the export is written once per test binary and copied (tests
// that each wrote their own spent half their time in WriteSQLite).
func benchFileCopy(t *testing.T, n int) string {
	t.Helper()
	benchFilesMu.Lock()
	b, ok := benchFiles[n]
	if !ok {
		var err error
		if b, err = os.ReadFile(benchFile(t, n)); err != nil {
			benchFilesMu.Unlock()
			t.Fatal(err)
		}
		benchFiles[n] = b
	}
	benchFilesMu.Unlock()
	path := filepath.Join(t.TempDir(), "bench.sqlite")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// BenchmarkDecode compares, on one file: the reference — SQLite alone
// scanning the kernel columns the decoder reads, through the same binding —
// with decoding the kernels into the model, and decoding everything.
func BenchmarkDecode(b *testing.B) {
	path := benchFile(b, benchKernels)
	b.Run("sqlite-scan", func(b *testing.B) {
		for b.Loop() {
			c, err := sqlite.OpenReadOnly(path)
			if err != nil {
				b.Fatal(err)
			}
			st, err := c.Prepare(`SELECT rowid, start, "end", deviceId, streamId, correlationId, globalPid, demangledName, shortName,
				mangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, graphId, graphNodeId FROM CUPTI_ACTIVITY_KIND_KERNEL`)
			if err != nil {
				b.Fatal(err)
			}
			var sum int64
			for {
				ok, err := st.Step()
				if err != nil {
					b.Fatal(err)
				}
				if !ok {
					break
				}
				for i := range 18 {
					if !st.IsNull(i) {
						sum += st.Int64(i)
					}
				}
			}
			st.Close()
			c.Close()
		}
		b.ReportMetric(float64(benchKernels)*float64(b.N)/b.Elapsed().Seconds(), "kernels/s")
	})
	for _, c := range []struct {
		name   string
		tables Tables
	}{{"kernels", Kernels}, {"all", 0}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := (Decoder{Tables: c.tables}).DecodeFile(context.Background(), path); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(benchKernels)*float64(b.N)/b.Elapsed().Seconds(), "kernels/s")
		})
	}
}

func BenchmarkKernelSummary(b *testing.B) {
	tr, err := Decoder{Tables: Kernels}.DecodeFile(context.Background(), benchFile(b, benchKernels))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		KernelSummary(tr, KernelDemangled)
	}
	b.ReportMetric(float64(benchKernels)*float64(b.N)/b.Elapsed().Seconds(), "kernels/s")
}
