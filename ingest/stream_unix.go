//go:build unix

package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// fileID identifies a file by device and inode.
type fileID struct{ dev, ino uint64 }

func identity(path string, st fs.FileInfo) (fileID, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(sys.Dev), ino: uint64(sys.Ino)}, true
}

// openSpecial opens a file that is not a regular file. Opening a named pipe
// blocks until a writer opens it, so that is done aside and given up after
// wait; a terminal is refused, since reading one waits for typing.
func openSpecial(ctx context.Context, path string, mode fs.FileMode, wait time.Duration) (*os.File, error) {
	var f *os.File
	var err error
	if mode&fs.ModeNamedPipe != 0 {
		f, err = openFIFO(ctx, path, wait)
	} else {
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, unwrapPathError(err)
	}
	if isTerminal(f) {
		f.Close()
		return nil, errors.New("is a terminal: give a trace file, or pipe one in")
	}
	// A pipe's reads wait for its writer: end them when the context is
	// cancelled (^C), as the decoders check it only between records.
	context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	return f, nil
}

// openFIFO opens a named pipe for reading, waiting at most wait for a writer.
func openFIFO(ctx context.Context, path string, wait time.Duration) (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	opened := make(chan result, 1)
	go func() {
		f, err := os.Open(path)
		opened <- result{f, err}
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	why := "no program opened it for writing within " + wait.String()
	select {
	case r := <-opened:
		return r.f, r.err
	case <-timer.C:
	case <-ctx.Done():
		why = "interrupted while waiting for a program to open it for writing"
	}
	// Release the blocked open by opening the pipe for writing ourselves
	// (which cannot block: a reader is waiting) and closing both ends.
	for range 100 {
		w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			if r := <-opened; r.f != nil {
				r.f.Close()
			}
			w.Close()
			break
		}
		select {
		case r := <-opened:
			// A writer came after all, or the open failed; either way
			// the reader goroutine is done.
			if r.f != nil {
				r.f.Close()
			}
			return nil, fmt.Errorf("named pipe (FIFO): %s", why)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("named pipe (FIFO): %s; start the writer first, or pipe the data to llmprof's standard input (-)", why)
}
