package cupti

import (
	"bytes"
	"context"
	"math"
	"path/filepath"

	"github.com/llmprof/llmprof/ingest"
)

// Decoder reads one .lpcupti file given on its own (`llmprof analyze
// cupti-123.lpcupti`), outside its capture: without the capture's host and
// boot, the files of one folder (one capture's processes) are taken as one
// machine's: their Source.Host is a hash of the folder's path, and they
// share the clock domain "cupti@<that hash>/", anchored by their own clock
// records. Inside a capture the capture reader decodes the files
// (record/decoder.go), all on one domain.
type Decoder struct{}

// Name is the format family.
func (Decoder) Name() string { return "cupti" }

// Sniff recognizes the magic.
func (Decoder) Sniff(in *ingest.Input) bool {
	return !in.Dir && bytes.HasPrefix(in.Head, []byte(Magic))
}

// Decode reads the file into t.
func (Decoder) Decode(ctx context.Context, in *ingest.Input, t *ingest.Trace) error {
	rc, err := in.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	size := in.Size
	if in.Compression != ingest.CompressionNone || in.Stream || size <= 0 {
		size = math.MaxInt64 // the decompressed size is not known
	}
	dir, aerr := filepath.Abs(filepath.Dir(in.Path))
	if aerr != nil {
		dir = filepath.Dir(in.Path)
	}
	_, err = Decode(in.Path, rc, size, t, Options{Host: ingest.HostID("folder:" + dir)})
	return err
}
