//go:build unix

package outfile

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeString(s string) func(*bufio.Writer) error {
	return func(w *bufio.Writer) error { _, err := w.WriteString(s); return err }
}

// leftovers lists the temporary files Create left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), ".llmprof-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestRegularFiles(t *testing.T) {
	dir := t.TempDir()
	t.Run("new file", func(t *testing.T) {
		p := filepath.Join(dir, "new.txt")
		if err := Write(p, Options{}, writeString("hello")); err != nil {
			t.Fatal(err)
		}
		assertFile(t, p, "hello", 0o644)
	})
	t.Run("existing file keeps its mode", func(t *testing.T) {
		p := filepath.Join(dir, "private.txt")
		if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o600) // umask-proof
		if err := Write(p, Options{}, writeString("new")); err != nil {
			t.Fatal(err)
		}
		assertFile(t, p, "new", 0o600)
	})
	t.Run("a failed write leaves the old file and no temporary", func(t *testing.T) {
		p := filepath.Join(dir, "keep.txt")
		os.WriteFile(p, []byte("old"), 0o644)
		err := Write(p, Options{}, func(w *bufio.Writer) error {
			w.WriteString("half")
			return errors.New("renderer failed")
		})
		if err == nil || err.Error() != "renderer failed" {
			t.Fatalf("err %v", err)
		}
		assertFile(t, p, "old", 0o644)
		if l := leftovers(t, dir); len(l) > 0 {
			t.Errorf("temporary files left: %v", l)
		}
	})
	t.Run("missing directory names the path", func(t *testing.T) {
		p := filepath.Join(dir, "no", "such", "report.txt")
		err := Write(p, Options{}, writeString("x"))
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err %v, want one naming %s and saying the directory does not exist", err, p)
		}
	})
	t.Run("a directory is an error naming it", func(t *testing.T) {
		sub := filepath.Join(dir, "adir")
		os.Mkdir(sub, 0o755)
		err := Write(sub, Options{}, writeString("x"))
		if err == nil || !strings.Contains(err.Error(), sub) || !strings.Contains(err.Error(), "a directory") {
			t.Fatalf("err %v", err)
		}
		if fi, _ := os.Lstat(sub); !fi.IsDir() {
			t.Error("the directory was replaced")
		}
	})
	t.Run("stdout", func(t *testing.T) {
		var buf bytes.Buffer
		if err := Write("-", Options{Stdout: &buf}, writeString("to stdout")); err != nil {
			t.Fatal(err)
		}
		if buf.String() != "to stdout" {
			t.Errorf("stdout got %q", buf.String())
		}
		if err := Write("-", Options{}, writeString("x")); err == nil {
			t.Error(`"-" without a stdout: no error`)
		}
	})
}

func assertFile(t *testing.T, p, content string, mode fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, want a regular file %v", p, fi.Mode(), mode)
	}
	b, _ := os.ReadFile(p)
	if string(b) != content {
		t.Errorf("%s holds %q, want %q", p, b, content)
	}
}

func TestSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.txt")
	os.WriteFile(target, []byte("old"), 0o640)
	os.Chmod(target, 0o640)
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	t.Run("to a regular file: the target is written, the link stays", func(t *testing.T) {
		if err := Write(link, Options{}, writeString("new")); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Lstat(link); fi.Mode()&fs.ModeSymlink == 0 {
			t.Error("the link was replaced by a file")
		}
		assertFile(t, target, "new", 0o640)
	})
	t.Run("inside an output directory: the link is replaced, its target untouched", func(t *testing.T) {
		planted := filepath.Join(dir, "planted.parquet")
		outside := filepath.Join(dir, "outside.txt")
		os.WriteFile(outside, []byte("precious"), 0o644)
		os.Symlink(outside, planted)
		if err := Write(planted, Options{InDir: true}, writeString("table")); err != nil {
			t.Fatal(err)
		}
		assertFile(t, planted, "table", 0o644)
		assertFile(t, outside, "precious", 0o644)
	})
	t.Run("to a directory: an error", func(t *testing.T) {
		l := filepath.Join(dir, "dirlink")
		os.Symlink(dir, l)
		err := Write(l, Options{}, writeString("x"))
		if err == nil || !strings.Contains(err.Error(), l) || !strings.Contains(err.Error(), "a directory") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("dangling: an error", func(t *testing.T) {
		l := filepath.Join(dir, "dangling")
		os.Symlink(filepath.Join(dir, "nowhere"), l)
		err := Write(l, Options{}, writeString("x"))
		if err == nil || !strings.Contains(err.Error(), l) {
			t.Fatalf("err %v", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
			t.Error("the link's target was created")
		}
	})
}

// TestCharacterDevice writes to a /dev/null node made in a temporary
// directory (where mknod is allowed) and to /dev/null itself: the node stays
// a device.
func TestCharacterDevice(t *testing.T) {
	check := func(t *testing.T, p string) {
		if err := Write(p, Options{}, writeString("discarded")); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&fs.ModeCharDevice == 0 {
			t.Fatalf("%s is now %v, want a character device", p, fi.Mode())
		}
		if err := Write(p, Options{InDir: true}, writeString("x")); err == nil {
			t.Errorf("%s inside an output directory: no error", p)
		}
	}
	t.Run("node", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "null")
		// /dev/null is character device 1:3 on Linux.
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Skipf("mknod of a character device is not allowed here (%v); /dev/null itself is tested below", err)
		}
		check(t, p)
	})
	t.Run("/dev/null", func(t *testing.T) {
		if _, err := os.Stat("/dev/null"); err != nil {
			t.Skip("no /dev/null")
		}
		check(t, "/dev/null")
	})
}

func TestNamedPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Run("with a reader", func(t *testing.T) {
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- "open: " + err.Error()
				return
			}
			b, _ := io.ReadAll(f)
			f.Close() // before the test goes on: the next open must find no reader
			got <- string(b)
		}()
		payload := strings.Repeat("row\n", 100_000) // more than a pipe buffer
		if err := Write(fifo, Options{}, writeString(payload)); err != nil {
			t.Fatal(err)
		}
		if s := <-got; s != payload {
			t.Errorf("reader got %d bytes, want %d", len(s), len(payload))
		}
		if fi, _ := os.Lstat(fifo); fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Errorf("the pipe is now %v", fi.Mode())
		}
	})
	t.Run("without a reader", func(t *testing.T) {
		start := time.Now()
		err := Write(fifo, Options{PipeWait: 100 * time.Millisecond}, writeString("x"))
		if err == nil || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "no process read") {
			t.Fatalf("err %v", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Errorf("took %s", time.Since(start))
		}
	})
}

func TestSocket(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(c)
		got <- string(b)
	}()
	if err := Write(p, Options{}, writeString("over the socket")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "over the socket" {
		t.Errorf("got %q", s)
	}
}

func TestDescriptorNames(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"/dev/fd/", "/proc/self/fd/"} {
		p := name + strconv.Itoa(int(w.Fd()))
		if err := Write(p, Options{}, writeString(name)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	w.Close()
	b, _ := io.ReadAll(r)
	if string(b) != "/dev/fd//proc/self/fd/" {
		t.Errorf("pipe got %q", b)
	}
	if _, ok := descriptor("/dev/stdout"); !ok {
		t.Error("/dev/stdout not recognised")
	}
}
