package otlp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// A file truncated by another process after it was mapped makes the
// decode's next read of a page past the new end fault (SIGBUS): the decode
// returns errShrank rather than crashing the process.
func TestMappedFileTruncatedUnderTheDecode(t *testing.T) {
	data := framedFile()
	path := filepath.Join(t.TempDir(), "dump.pb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := ingest.NewInput(path)
	if err != nil {
		t.Fatal(err)
	}
	m := mapInput(in)
	if m == nil {
		t.Fatal("a regular framed file is not mapped")
	}
	defer m.close()
	if err := os.Truncate(path, 8192); err != nil {
		t.Fatal(err)
	}
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: path, Format: "otlp"}}
	err = m.guard(func() error {
		return (&Decoder{}).decode(context.Background(), nil, formFramed, tr, 0, int64(len(data)), m.frames())
	})
	if !errors.Is(err, errShrank) {
		t.Fatalf("err = %v, want errShrank", err)
	}
}

// guard turns only a fault inside the mapping into an error: any other
// panic, a fault elsewhere included, goes on.
func TestMappedFileGuardPanicsOn(t *testing.T) {
	m := &mappedFile{data: make([]byte, 4096)}
	for name, f := range map[string]func() error{
		"panic": func() error { panic("a bug") },
		"nil":   func() error { var p *[8]byte; return errors.New(string(p[:])) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("guard recovered a panic that is not a fault in the mapping")
				}
			}()
			_ = m.guard(f)
		})
	}
}
