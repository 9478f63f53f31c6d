package record

import (
	"crypto/rand"
	"io"
	"os"
)

// fillIncompressible writes n bytes a compressing or deduplicating file
// system cannot store in less: room actually taken on the disk.
func fillIncompressible(f *os.File, n int64) error {
	_, err := io.CopyN(f, rand.Reader, n)
	return err
}
