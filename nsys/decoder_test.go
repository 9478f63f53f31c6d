package nsys

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmprof/llmprof/internal/shareddata"
)

// A relative path must open: the SQLite URI would otherwise read its first
// element as a host name.
func TestRelativePath(t *testing.T) {
	src := shareddata.Path(t, "testdata/nsys/nvidia-fuser-report2-nsys2024.6.2.sqlite")
	dir := t.TempDir()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "r.sqlite"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	tr, err := Decoder{}.DecodeFile(context.Background(), "r.sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.GPUOps) == 0 {
		t.Fatal("no GPU ops decoded")
	}
	if err := WriteSQLite(filepath.Join(".", "out.sqlite"), tr, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}
