package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

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
	dir, err := os.MkdirTemp("", "llmprof-nsys-*")
	if err != nil {
		return nil, err
	}
	dst := filepath.Join(dir, out)
	cmd := exec.CommandContext(ctx, nsys, "export", "--type", "sqlite", "--output", dst, src)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
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
