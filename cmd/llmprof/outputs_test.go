//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var smallRun struct {
	once sync.Once
	dir  string
	err  string
}

// smallDemo is a 2 s demo run without GPU data, written once per test
// binary: enough to render a report.
func smallDemo(t *testing.T) string {
	t.Helper()
	smallRun.once.Do(func() {
		dir, err := os.MkdirTemp("", "llmprof-outputs-*")
		if err != nil {
			smallRun.err = err.Error()
			return
		}
		if code, _, errOut := runLLMProf(t, "demo", "--duration", "2s", "--nsys", "0", dir); code != ExitOK {
			smallRun.err = errOut
		}
		smallRun.dir = dir
	})
	if smallRun.err != "" {
		t.Fatalf("demo: %s", smallRun.err)
	}
	return smallRun.dir
}

// TestOutputTargets: -o never replaces what is not a file of ours. A device
// stays a device, a named pipe's reader gets the report, a link to a file
// stays a link, a directory and a missing folder are errors naming the path,
// and "-" is stdout.
func TestOutputTargets(t *testing.T) {
	in := smallDemo(t)
	code, want, errOut := runLLMProf(t, "analyze", in)
	if code != ExitOK || want == "" {
		t.Fatalf("analyze to stdout: exit %d: %s", code, errOut)
	}
	dir := t.TempDir()

	t.Run("character device", func(t *testing.T) {
		node := filepath.Join(dir, "null")
		if err := syscall.Mknod(node, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Skipf("mknod is not allowed here (%v)", err)
		}
		if code, _, errOut := runLLMProf(t, "analyze", "-o", node, in); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if fi, err := os.Lstat(node); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Fatalf("%s is now %v (%v), want a character device", node, fi.Mode(), err)
		}
	})
	t.Run("named pipe with a reader", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- err.Error()
				return
			}
			b, _ := io.ReadAll(f)
			f.Close() // before the test goes on: the next open must find no reader
			got <- string(b)
		}()
		if code, _, errOut := runLLMProf(t, "analyze", "-o", fifo, in); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if s := <-got; s != want {
			t.Errorf("the reader got %d bytes, stdout has %d", len(s), len(want))
		}
		if fi, _ := os.Lstat(fifo); fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the pipe is now %v", fi.Mode())
		}
	})
	t.Run("symbolic link to a file", func(t *testing.T) {
		target := filepath.Join(dir, "target.txt")
		os.WriteFile(target, []byte("old"), 0o644)
		link := filepath.Join(dir, "link.txt")
		os.Symlink(target, link)
		if code, _, errOut := runLLMProf(t, "analyze", "-o", link, in); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if fi, _ := os.Lstat(link); fi.Mode()&fs.ModeSymlink == 0 {
			t.Error("the link was replaced")
		}
		if b, _ := os.ReadFile(target); string(b) != want {
			t.Errorf("the target holds %d bytes, want the report's %d", len(b), len(want))
		}
	})
	for _, tc := range []struct{ name, path, want string }{
		{"directory", dir, "is a directory"},
		{"missing folder", filepath.Join(dir, "no", "such", "r.txt"), "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runLLMProf(t, "analyze", "-o", tc.path, in)
			if code != ExitError || !strings.Contains(errOut, tc.path) || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, stderr %q: want exit 1 naming %s (%s)", code, errOut, tc.path, tc.want)
			}
		})
	}
	t.Run("dash is stdout", func(t *testing.T) {
		if code, out, errOut := runLLMProf(t, "analyze", "-o", "-", in); code != ExitOK || out != want {
			t.Fatalf("exit %d, %d bytes on stdout (want %d): %s", code, len(out), len(want), errOut)
		}
	})
}

// TestParquetStaysInside: a symbolic link planted at a table's name in the
// export directory is replaced, and its target untouched; a tenant whose
// name climbs out of the directory writes nothing outside it.
func TestParquetStaysInside(t *testing.T) {
	in := smallDemo(t)
	root := t.TempDir()
	src, err := os.ReadFile(filepath.Join(in, "trace.otlp.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	hostile := filepath.Join(root, "in", "trace.otlp.jsonl")
	os.MkdirAll(filepath.Dir(hostile), 0o755)
	os.WriteFile(hostile, []byte(strings.ReplaceAll(string(src), `"batch-eval"`, `"../../x"`)), 0o644)

	out := filepath.Join(root, "out", "run")
	os.MkdirAll(out, 0o755)
	precious := filepath.Join(root, "precious.txt")
	os.WriteFile(precious, []byte("keep"), 0o644)
	os.Symlink(precious, filepath.Join(out, "requests.parquet"))

	if code, _, errOut := runLLMProf(t, "export", "--parquet", out, filepath.Dir(hostile)); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(precious); string(b) != "keep" {
		t.Errorf("the planted link's target was overwritten: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(out, "requests.parquet")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("requests.parquet is not a regular file: %v %v", fi, err)
	}
	var outside []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasPrefix(p, out+string(filepath.Separator)) && p != precious && p != hostile {
			outside = append(outside, p)
		}
		return nil
	})
	if len(outside) > 0 {
		t.Errorf("files written outside %s: %v", out, outside)
	}
	ents, _ := os.ReadDir(out)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "alignment.parquet,gpu_ops.parquet,requests.parquet,spans.parquet,steps.parquet,tokens.parquet" {
		t.Errorf("the export directory holds %v", names)
	}
}

// TestControlCharactersNeverReachTheTerminal: a tenant named with a window
// title sequence, a screen clear and a carriage return prints with them made
// visible, in analyze and tenants, on stdout and stderr; the report's own
// colours stay.
func TestControlCharactersNeverReachTheTerminal(t *testing.T) {
	in := smallDemo(t)
	src, err := os.ReadFile(filepath.Join(in, "trace.otlp.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hostile := `"\u001b]0;pwned\u0007evil\u001b[2J\rbatch"`
	os.WriteFile(filepath.Join(dir, "trace.otlp.jsonl"), []byte(strings.ReplaceAll(string(src), `"batch-eval"`, hostile)), 0o644)
	sgr := regexp.MustCompile(`\x1b\[[0-9;:]*m`)
	for _, args := range [][]string{{"analyze", dir}, {"tenants", dir}} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), args, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, OutTTY: true, ErrTTY: true})
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		if !strings.Contains(out.String(), `\x1b]0;pwned\x07evil\x1b[2J\x0dbatch`) {
			t.Errorf("%v: the tenant's name is not shown escaped", args)
		}
		if !sgr.MatchString(out.String()) {
			t.Errorf("%v: the report lost its colours", args)
		}
		for name, s := range map[string]string{"stdout": out.String(), "stderr": errOut.String()} {
			// The progress meter redraws its line with \r and erase-line
			// (internal/progress); nothing else may.
			s = strings.ReplaceAll(s, "\r\x1b[K", "")
			for _, c := range sgr.ReplaceAllString(s, "") {
				if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
					t.Errorf("%v: %s carries control character %#x", args, name, c)
					break
				}
			}
		}
	}
}
