//go:build unix

package ingest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/nsys"
)

// nsysRep is the start of an Nsight Systems report as nsys 2023-2024 write
// it: the header line, then protobuf fields (the bytes after the header are
// made up).
var nsysRep = append([]byte("NVIDIA Tegra Profiler Report 1.\n\x0bLocal (CLI)\x12\x04\x08\x0c\x08{"), bytes.Repeat([]byte{0x42, 0x17}, 200)...)

var withNsys = []ingest.Decoder{nsys.Decoder{}, &otlp.Decoder{}}

// fakeNsys puts on PATH an nsys that copies export into the --output path
// and logs its arguments; with fail set it fails as a real one does.
func fakeNsys(t *testing.T, export string, fail bool) (logFile string) {
	t.Helper()
	bin := t.TempDir()
	logFile = filepath.Join(bin, "args.log")
	script := "#!/bin/sh\necho \"$@\" >> " + logFile + "\n"
	if fail {
		script += "echo 'Importer error status: Importation failed.' >&2\nexit 1\n"
	} else {
		script += `out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--output" ]; then out="$2"; fi
  shift
done
/bin/cp "` + export + `" "$out"
`
	}
	if err := os.WriteFile(filepath.Join(bin, "nsys"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	return logFile
}

// Without nsys, an .nsys-rep is an error that gives the export command.
func TestNsysReportWithoutNsys(t *testing.T) {
	dir := t.TempDir()
	rep := write(t, filepath.Join(dir, "report1.nsys-rep"), nsysRep)
	t.Setenv("PATH", t.TempDir())
	_, err := ingest.Open(context.Background(), []string{rep}, withNsys, ingest.OpenOptions{})
	want := "nsys export --type sqlite --output " + filepath.Join(dir, "report1.sqlite") + " " + rep
	if err == nil || !strings.Contains(err.Error(), rep+": an Nsight Systems report") || !strings.Contains(err.Error(), want) {
		t.Errorf("error = %v\nwant it to contain %q", err, want)
	}
	// The header of a newer nsys names its version.
	newer := write(t, filepath.Join(dir, "new report.qdrep"), []byte("NVIDIA Tegra Profiler Report 2026@4@1@191-264138605071v0.\n\x0bLocal (CLI)\x12\n"))
	_, err = ingest.Open(context.Background(), []string{newer}, withNsys, ingest.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "written by nsys 2026.4.1.191") ||
		!strings.Contains(err.Error(), "--output '"+filepath.Join(dir, "new report.sqlite")+"' '"+newer+"'") {
		t.Errorf("error = %v", err)
	}
}

// With nsys on PATH, the report is exported to a temporary directory, decoded
// as its export would be, and the directory removed.
func TestNsysReportConverted(t *testing.T) {
	export := shareddata.Path(t, "testdata/nsys/nvidia-fuser-report1-nsys2025.1.1.sqlite")
	direct, err := ingest.Open(context.Background(), []string{export}, withNsys, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	logFile := fakeNsys(t, export, false)
	rep := write(t, filepath.Join(t.TempDir(), "report1.nsys-rep"), nsysRep)
	for _, c := range []struct {
		name string
		path string
		opts ingest.OpenOptions
	}{
		{"file", rep, ingest.OpenOptions{}},
		{"stdin", "-", ingest.OpenOptions{Stdin: bytes.NewReader(nsysRep)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(logFile)
			tr, err := ingest.Open(context.Background(), []string{c.path}, withNsys, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.GPUOps) == 0 || len(tr.GPUOps) != len(direct.GPUOps) || len(tr.Spans) != len(direct.Spans) {
				t.Errorf("%d GPU ops, %d spans; the export itself has %d, %d", len(tr.GPUOps), len(tr.Spans), len(direct.GPUOps), len(direct.Spans))
			}
			src := tr.Sources[0]
			if want := map[string]string{"file": rep, "stdin": "<stdin>"}[c.name]; src.Path != want || src.Format != "nsys-sqlite" || src.Meta["converted"] != "nsys export --type sqlite" {
				t.Errorf("source %+v", src)
			}
			args, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(string(args))
			if len(f) != 6 || strings.Join(f[:4], " ") != "export --type sqlite --output" || !strings.HasSuffix(f[4], ".sqlite") {
				t.Fatalf("nsys called with %q", args)
			}
			if c.name == "file" && f[5] != rep {
				t.Errorf("nsys exported %s, want %s", f[5], rep)
			}
			if _, err := os.Stat(filepath.Dir(f[4])); !os.IsNotExist(err) {
				t.Errorf("the temporary export %s is left behind (%v)", f[4], err)
			}
		})
	}
}

// A failing nsys export is an error with its message.
func TestNsysReportExportFails(t *testing.T) {
	fakeNsys(t, "", true)
	rep := write(t, filepath.Join(t.TempDir(), "report1.nsys-rep"), nsysRep)
	_, err := ingest.Open(context.Background(), []string{rep}, withNsys, ingest.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), rep+": ") || !strings.Contains(err.Error(), "export --type sqlite` failed") ||
		!strings.Contains(err.Error(), "Importation failed") {
		t.Errorf("error = %v", err)
	}
}

// In a directory, a report whose export lies beside it is skipped (reading
// both would count every kernel twice).
func TestNsysReportBesideItsExport(t *testing.T) {
	export := shareddata.Path(t, "testdata/nsys/nvidia-fuser-report1-nsys2025.1.1.sqlite")
	data, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "report1.sqlite"), data)
	rep := write(t, filepath.Join(dir, "report1.nsys-rep"), nsysRep)
	t.Setenv("PATH", t.TempDir())
	tr, err := ingest.Open(context.Background(), []string{dir}, withNsys, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Sources) != 1 || !hasWarning(tr, "skipped-file", rep, "whose SQLite export report1.sqlite is in the same directory") {
		t.Errorf("%d sources:\n%s", len(tr.Sources), warnings(tr))
	}
}

// A symlinked nsys export inside a directory is read (it used to be left
// out without a word).
func TestSymlinkedNsysExport(t *testing.T) {
	export := shareddata.Path(t, "testdata/nsys/nvidia-fuser-report1-nsys2025.1.1.sqlite")
	dir := t.TempDir()
	if err := os.Symlink(export, filepath.Join(dir, "gpu.sqlite")); err != nil {
		t.Skip(err)
	}
	write(t, filepath.Join(dir, "trace.jsonl"), spansJSONL(3, 0))
	tr, err := ingest.Open(context.Background(), []string{dir}, withNsys, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Sources) != 2 || len(tr.GPUOps) == 0 || tr.Sources[0].Path != filepath.Join(dir, "gpu.sqlite") {
		t.Errorf("%d sources, %d GPU ops:\n%s", len(tr.Sources), len(tr.GPUOps), warnings(tr))
	}
}
