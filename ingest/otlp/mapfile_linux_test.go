package otlp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// A file cut short by another process after it was mapped (logrotate's
// copytruncate) decodes as the stream reader decodes what is left: every
// record before the cut kept, one "truncated" warning. Cuts in a record's
// payload, at a page boundary and not, and in a record's header.
func TestMappedFileTruncatedUnderTheDecode(t *testing.T) {
	data := framedFile()
	for _, cut := range []int{8192, 1 << 20, 1<<20 + 1001, len(data) - 2} {
		path, m := mappedDump(t, data)
		if err := os.Truncate(path, int64(cut)); err != nil {
			t.Fatal(err)
		}
		tr := ingest.New()
		tr.Sources = []ingest.Source{{Path: path, Format: "otlp"}}
		err := m.guard(func() error {
			return (&Decoder{}).decode(context.Background(), nil, formFramed, tr, 0, int64(len(data)), m.frames())
		})
		m.close()
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		want, err := (&Decoder{}).DecodeReader(context.Background(), path, bytes.NewReader(data[:cut]))
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Spans) != len(want.Spans) || cut > 1<<20 && len(want.Spans) == 0 {
			t.Fatalf("cut at %d: %d spans, the stream reader keeps %d", cut, len(tr.Spans), len(want.Spans))
		}
		if got, w := warningKinds(tr), warningKinds(want); got != w || !strings.Contains(got, "truncated") {
			t.Fatalf("cut at %d: warnings %q, the stream reader's %q", cut, got, w)
		}
	}
}

func warningKinds(t *ingest.Trace) string {
	var kinds []string
	for _, w := range t.Warnings.List {
		kinds = append(kinds, w.Code+" "+w.Pos+" "+w.Msg)
	}
	return strings.Join(kinds, ",")
}

// A file cut short after readable asked its size for a record faults in
// the middle of the record's decode: the input fails (errShrank) rather
// than the process crashing, and no half-decoded record is kept.
func TestMappedFileTruncatedInTheRace(t *testing.T) {
	data := framedFile()
	path, m := mappedDump(t, data)
	defer m.close()
	if err := os.Truncate(path, 8192); err != nil {
		t.Fatal(err)
	}
	frames := m.frames().(*byteFrames)
	frames.readable = func(_, n int) int { return n } // the size as it was before the cut
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: path, Format: "otlp"}}
	err := m.guard(func() error {
		return (&Decoder{}).decode(context.Background(), nil, formFramed, tr, 0, int64(len(data)), frames)
	})
	if !errors.Is(err, errShrank) {
		t.Fatalf("err = %v, want errShrank", err)
	}
}

// A length past int (a 32-bit system, a limit over 2 GiB) is an error, as
// the stream reader's, not a panic.
func TestByteFramesNegativeLength(t *testing.T) {
	f := &byteFrames{b: make([]byte, 16)}
	if _, err := f.record(-1); err == nil {
		t.Error("record(-1): no error")
	}
	if _, err := f.discard(-1); err == nil {
		t.Error("discard(-1): no error")
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
