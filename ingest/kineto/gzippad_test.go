package kineto

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// TestZeroPaddedGzip: a real trace with zero bytes after its gzip member (as
// tape tools and some uploaders pad files; gzip -d ignores them) decodes to
// the same events as the file itself, with no warning.
func TestZeroPaddedGzip(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := decodeReal(t, path)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			padded := filepath.Join(t.TempDir(), filepath.Base(path))
			if err := os.WriteFile(padded, append(b, make([]byte, 10240)...), 0o644); err != nil {
				t.Fatal(err)
			}
			got := decodeReal(t, padded)
			if len(got.GPUOps) != len(want.GPUOps) || len(got.Spans) != len(want.Spans) || len(got.APICalls) != len(want.APICalls) {
				t.Errorf("padded: %d GPU ops, %d spans, %d API calls; the file itself: %d, %d, %d", len(got.GPUOps), len(got.Spans), len(got.APICalls),
					len(want.GPUOps), len(want.Spans), len(want.APICalls))
			}
			if codes(got) != codes(want) {
				t.Errorf("padded: warnings %q; the file itself: %q", codes(got), codes(want))
			}
		})
	}
}

func codes(t *ingest.Trace) string {
	var s string
	for _, w := range t.Warnings.List {
		s += w.Code + ","
	}
	return s
}
