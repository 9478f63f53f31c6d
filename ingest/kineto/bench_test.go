package kineto

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// BenchmarkDecode decodes the file named by LLMPROF_KINETO_BENCH (a trace
// bench/kinetobench wrote, or any real one), from memory.
func BenchmarkDecode(b *testing.B) {
	path := os.Getenv("LLMPROF_KINETO_BENCH")
	if path == "" {
		b.Skip("set LLMPROF_KINETO_BENCH to a trace file (bench/kineto.sh does)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Decoder{}).DecodeReader(context.Background(), bytes.NewReader(data), path); err != nil {
			b.Fatal(err)
		}
	}
}
