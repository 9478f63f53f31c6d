//go:build !unix

package ingest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// fileID identifies a file; without inode numbers, by its resolved path.
type fileID struct{ path string }

func identity(path string, st fs.FileInfo) (fileID, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fileID{}, false
	}
	abs, err := filepath.Abs(real)
	if err != nil {
		return fileID{}, false
	}
	return fileID{path: abs}, true
}

// openSpecial opens a file that is not a regular file.
func openSpecial(ctx context.Context, path string, mode fs.FileMode, wait time.Duration) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	return f, nil
}
