package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// nsysTempPrefix names the temporary folders the conversion writes into
// (under os.TempDir), each holding ownerFile with its process's pid.
const (
	nsysTempPrefix = "llmprof-nsys-"
	ownerFile      = "llmprof.pid"
)

// removeStaleExports removes the conversion folders that a killed llmprof
// left behind: those whose owner process no longer runs. A folder without an
// owner file (an older llmprof's, or one being created) is left alone
// unless it is a day old.
func removeStaleExports() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), nsysTempPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			if fi, serr := os.Lstat(d); serr == nil && fi.IsDir() && time.Since(fi.ModTime()) > 24*time.Hour {
				os.RemoveAll(d)
			}
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		os.RemoveAll(d)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

func (b *tailBuffer) Bytes() []byte { return b.buf }

// exportNsysReport turns an Nsight Systems report into its SQLite export, as
// nsys stats does: with nsys on PATH, `nsys export --type sqlite` writes it to
// a temporary directory that the returned input's Close removes. Without
// nsys, the error gives the command to run.
func exportNsysReport(ctx context.Context, in *Input, opts *OpenOptions) (*Input, error) {
	what := "an Nsight Systems report"
	if v := nsysReportVersion(in.Head); v != "" {
		what += " written by nsys " + v
	}
	out := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(in.Path), ".nsys-rep"), ".qdrep") + ".sqlite"
	if in.Stream {
		out = "report.sqlite"
	}
	nsys, err := exec.LookPath("nsys")
	if err != nil {
		src := in.Path
		if in.Stream {
			src = "REPORT.nsys-rep"
		}
		return nil, fmt.Errorf("%s; llmprof reads its SQLite export, and nsys is not on PATH to make one: run\n    nsys export --type sqlite --output %s %s\n  and give llmprof the .sqlite file", what,
			shellQuote(filepath.Join(filepath.Dir(src), out)), shellQuote(src))
	}
	src, doneSrc, err := in.LocalFile()
	if err != nil {
		return nil, err
	}
	defer doneSrc()
	removeStaleExports()
	dir, err := os.MkdirTemp("", nsysTempPrefix+"*")
	if err != nil {
		return nil, err
	}
	// The owner's pid, so that a later run can remove the folder if this
	// process dies without cleaning up (SIGKILL).
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	dst := filepath.Join(dir, out)
	// A name starting with "-" would reach nsys as an option.
	if strings.HasPrefix(src, "-") {
		src = "." + string(filepath.Separator) + src
	}
	cmd := exec.CommandContext(ctx, nsys, "export", "--type", "sqlite", "--output", dst, src)
	// nsys's output is kept to its last 64 KiB: the error quotes its last
	// lines, and an nsys that prints gigabytes must not fill memory.
	stderr := &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	// On cancel (SIGINT, SIGTERM) the whole process group goes, nsys's
	// children too; WaitDelay bounds the wait for a child that still holds
	// the output pipe, so Run returns within seconds either way.
	configureChild(cmd)
	cmd.WaitDelay = 3 * time.Second
	// Pdeathsig follows the thread that started the child: hold it while
	// nsys runs, so the Go runtime cannot retire it under nsys.
	runtime.LockOSThread()
	err = cmd.Run()
	runtime.UnlockOSThread()
	if err != nil {
		os.RemoveAll(dir)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s; `%s export --type sqlite` failed (%v): %s", what, nsys, err, lastLines(stderr.Bytes(), 5))
	}
	if _, err := os.Stat(dst); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%s; `%s export --type sqlite --output %s` succeeded but wrote no file", what, nsys, dst)
	}
	sq, err := newInput(ctx, dst, opts)
	if err != nil {
		os.RemoveAll(dir)
		var ie *InputError
		if errors.As(err, &ie) {
			err = ie.Err
		}
		return nil, fmt.Errorf("reading the export nsys wrote: %w", err)
	}
	sq.local, sq.Path = dst, in.Path
	sq.cleanup = append(sq.cleanup, func() { os.RemoveAll(dir) })
	return sq, nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=+,:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lastLines is the end of a command's output, for an error message.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	s := strings.Join(lines, " / ")
	if len(s) > 600 {
		s = s[len(s)-600:]
	}
	if s == "" {
		return "no output"
	}
	return s
}
