package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// walker turns the paths given into inputs: a file is one input; a directory
// that a decoder recognizes as a whole (a capture) is one input; any other
// directory is walked, following symbolic links. Directories and files are
// told apart by device and inode, so that a symlink loop is walked once and a
// file reached twice (a link, or a path given twice) is read once; each thing
// skipped is a warning naming it.
type walker struct {
	ctx      context.Context
	decoders []Decoder
	opts     *OpenOptions
	inputs   []*Input
	skipped  []Warning
	// seen maps the identity of every directory and file taken to the path
	// it was first reached by.
	seen  map[fileID]string
	stdin bool
}

func newWalker(ctx context.Context, decoders []Decoder, opts *OpenOptions) *walker {
	return &walker{ctx: ctx, decoders: decoders, opts: opts, seen: map[fileID]string{}}
}

// maxWalkDepth bounds how deep a walk descends (symlinks can make a tree of
// any depth without a loop).
const maxWalkDepth = 64

func (w *walker) skip(path, code, format string, args ...any) {
	w.skipped = append(w.skipped, Warning{Path: path, Code: code, Msg: fmt.Sprintf(format, args...)})
}

// expandAll expands every path; on error it returns the inputs opened so far,
// for the caller to close.
func (w *walker) expandAll(paths []string) ([]*Input, error) {
	for _, p := range paths {
		if err := w.expand(p); err != nil {
			return w.inputs, err
		}
	}
	return w.inputs, nil
}

func (w *walker) expand(path string) error {
	if path == StdinPath {
		if w.stdin {
			return &InputError{stdinName, errors.New("standard input (-) given twice")}
		}
		w.stdin = true
		in, err := newInput(w.ctx, path, w.opts)
		if err != nil {
			return err
		}
		w.inputs = append(w.inputs, in)
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return &InputError{path, unwrapPathError(err)}
	}
	id, hasID := identity(path, st)
	if hasID {
		if first, dup := w.seen[id]; dup {
			w.skip(path, "duplicate-input", "skipped: the same %s as %s, already read", kindOf(st), first)
			return nil
		}
		w.seen[id] = path
	}
	if !st.IsDir() {
		in, err := newInput(w.ctx, path, w.opts)
		if err != nil {
			return err
		}
		w.inputs = append(w.inputs, in)
		return nil
	}
	dirIn := &Input{Path: path, Dir: true}
	if sniffDecoder(dirIn, w.decoders) != nil {
		dirIn.Size = dirSize(path)
		w.inputs = append(w.inputs, dirIn)
		return nil
	}
	from := len(w.inputs)
	if err := w.walk(path, 0); err != nil {
		return err
	}
	found := w.inputs[from:]
	slices.SortFunc(found, func(a, b *Input) int { return strings.Compare(a.Path, b.Path) })
	return nil
}

// walk reads the directory dir, whose identity is already in seen.
func (w *walker) walk(dir string, depth int) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if depth == 0 {
			return &InputError{dir, unwrapPathError(err)}
		}
		w.skip(dir, "skipped-file", "skipped: directory not readable (%v)", unwrapPathError(err))
		return nil
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			// Hidden files and directories (.git, .DS_Store) are not inputs.
			continue
		}
		p := filepath.Join(dir, name)
		st, err := os.Stat(p) // follows a symbolic link
		if err != nil {
			if e.Type()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(p)
				w.skip(p, "skipped-file", "skipped: a symbolic link to %s, which cannot be read (%v)", target, unwrapPathError(err))
			} else {
				w.skip(p, "skipped-file", "skipped: %v", unwrapPathError(err))
			}
			continue
		}
		if !st.IsDir() && !st.Mode().IsRegular() {
			w.skip(p, "skipped-file", "skipped: a %s, which is read only when named on the command line", kindOf(st))
			continue
		}
		id, hasID := identity(p, st)
		if hasID {
			if first, dup := w.seen[id]; dup {
				if st.IsDir() {
					w.skip(p, "symlink-loop", "skipped: the same directory as %s, already walked (a symbolic link loop or a second link to it)", first)
				} else {
					w.skip(p, "duplicate-input", "skipped: the same file as %s, already read (a symbolic or hard link)", first)
				}
				continue
			}
			w.seen[id] = p
		}
		if st.IsDir() {
			sub := &Input{Path: p, Dir: true}
			if sniffDecoder(sub, w.decoders) != nil {
				sub.Size = dirSize(p)
				w.inputs = append(w.inputs, sub)
				continue
			}
			if depth+1 >= maxWalkDepth {
				w.skip(p, "skipped-file", "skipped: more than %d directories deep", maxWalkDepth)
				continue
			}
			if err := w.walk(p, depth+1); err != nil {
				return err
			}
			continue
		}
		in, err := newInput(w.ctx, p, w.opts)
		if err != nil {
			var ie *InputError
			if errors.As(err, &ie) {
				err = ie.Err
			}
			w.skip(p, "skipped-file", "skipped: %v", err)
			continue
		}
		switch {
		case len(bytes.TrimSpace(in.Head)) == 0:
			w.skip(p, "skipped-file", "skipped: empty file")
			in.Close()
			continue
		case sniffDecoder(in, w.decoders) != nil:
		case isNsysReport(in.Head):
			if sq := siblingExport(name, names); sq != "" {
				w.skip(p, "skipped-file", "skipped: an Nsight Systems report whose SQLite export %s is in the same directory and is read instead", sq)
				continue
			}
		default:
			w.skip(p, "skipped-file", "skipped: %v", unknownFormatError(in, w.decoders))
			in.Close()
			continue
		}
		w.inputs = append(w.inputs, in)
	}
	return nil
}

// siblingExport is the name of the SQLite export beside an .nsys-rep, if the
// directory has one: nsys stats and nsys export write report1.sqlite beside
// report1.nsys-rep.
// dirSize is the size of a directory input (a capture): the regular files
// below it, as its decoder reads them (links are not followed: a capture's
// reader opens regular files only).
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func siblingExport(name string, names map[string]bool) string {
	stem := strings.TrimSuffix(strings.TrimSuffix(name, ".nsys-rep"), ".qdrep")
	if stem == name {
		return ""
	}
	if names[stem+".sqlite"] {
		return stem + ".sqlite"
	}
	return ""
}

// kindOf names what kind of file st describes, for messages.
func kindOf(st fs.FileInfo) string { return FileKind(st.Mode()) }

// FileKind names the kind of file a mode describes, for messages
// ("directory", "named pipe (FIFO)", …; each reads after "a").
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file (" + m.Type().String() + ")"
}
