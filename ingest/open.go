package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// HeadSize is how much of an input's (decompressed) content sniffers see.
const HeadSize = 64 << 10

// Compression is a whole-file compression wrapper.
type Compression uint8

const (
	CompressionNone Compression = iota
	CompressionGzip
	CompressionZstd
)

func (c Compression) String() string {
	switch c {
	case CompressionGzip:
		return "gzip"
	case CompressionZstd:
		return "zstd"
	}
	return "none"
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Input is one file or directory offered to the decoders.
type Input struct {
	Path string
	Dir  bool
	// Size of the file on disk (compressed size if compressed).
	Size int64
	// Compression wraps the whole file; Open undoes it.
	Compression Compression
	// Head is the first HeadSize bytes of the decompressed content (less for a
	// shorter file); empty for directories.
	Head []byte
}

// Open returns the decompressed content of a file input.
func (in *Input) Open() (io.ReadCloser, error) {
	f, err := os.Open(in.Path)
	if err != nil {
		return nil, err
	}
	switch in.Compression {
	case CompressionGzip:
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return readCloser{zr, func() error { zr.Close(); return f.Close() }}, nil
	case CompressionZstd:
		zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<30))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return readCloser{zr.IOReadCloser(), func() error { zr.Close(); return f.Close() }}, nil
	}
	return f, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// Decoder turns one recognized input into a Trace. Decoders are handed to
// Open by the command; nothing registers itself.
type Decoder interface {
	// Name is a short format family name ("otlp", "nsys", "capture").
	Name() string
	// Sniff reports whether the input is in this decoder's format, from its
	// content (Head) or, for a directory, its layout.
	Sniff(in *Input) bool
	// Decode fills t, whose Sources[0] already holds the input's path. It
	// returns an error only when the input is unreadable as a whole; bad
	// records become warnings (t.Warnf) and everything else is kept.
	Decode(ctx context.Context, in *Input, t *Trace) error
}

// OpenOptions tune Open.
type OpenOptions struct {
	// Parallelism bounds how many inputs are decoded at once (default
	// GOMAXPROCS).
	Parallelism int
	// Progress, if set, is called after each input is decoded.
	Progress func(done, total int, path string)
}

// InputError is an input that could not be read at all.
type InputError struct {
	Path string
	Err  error
}

func (e *InputError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// ErrUnknownFormat is wrapped by the error for a file no decoder recognizes.
var ErrUnknownFormat = errors.New("not a recognized input format")

// Open decodes every path (files, or directories walked recursively) with the
// decoder that recognizes it, in parallel, and merges the results in the
// order given, then runs Validate. A file named explicitly that no decoder
// recognizes is an error; inside a directory it is skipped with a warning.
func Open(ctx context.Context, paths []string, decoders []Decoder, opts OpenOptions) (*Trace, error) {
	var inputs []*Input
	var skipped []Warning
	for _, p := range paths {
		found, skips, err := expand(p, decoders)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, found...)
		skipped = append(skipped, skips...)
	}
	if len(inputs) == 0 {
		return nil, fmt.Errorf("no input in %s: %w", strings.Join(paths, ", "), ErrUnknownFormat)
	}
	parts := make([]*Trace, len(inputs))
	errs := make([]error, len(inputs))
	par := opts.Parallelism
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
		sem  = make(chan struct{}, par)
	)
	for i, in := range inputs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			parts[i], errs[i] = decodeOne(ctx, in, decoders)
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, len(inputs), in.Path)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t := Merge(parts...)
	for _, w := range skipped {
		t.Warnings.Add(w)
	}
	t.Validate()
	return t, nil
}

func decodeOne(ctx context.Context, in *Input, decoders []Decoder) (t *Trace, err error) {
	if !in.Dir && len(in.Head) == 0 {
		// An empty file holds no records; say so and keep the other inputs.
		t = New()
		t.Sources = []Source{{Path: in.Path, Format: "empty"}}
		t.Warnf(0, "", "empty-file", "empty file: nothing to read")
		return t, nil
	}
	var dec Decoder
	for _, d := range decoders {
		if d.Sniff(in) {
			dec = d
			break
		}
	}
	if dec == nil {
		return nil, &InputError{in.Path, fmt.Errorf("%w (%s)", ErrUnknownFormat, describeHead(in))}
	}
	t = New()
	t.Sources = []Source{{Path: in.Path, Format: dec.Name()}}
	defer func() {
		// A decoder must never panic on input; if one does, that is our bug,
		// but the user still gets a message naming the file, not a crash.
		if r := recover(); r != nil {
			err = &InputError{in.Path, fmt.Errorf("internal error in %s decoder: %v", dec.Name(), r)}
		}
	}()
	if err := dec.Decode(ctx, in, t); err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, &InputError{in.Path, err}
	}
	return t, nil
}

// expand turns a path into inputs: a file is one input; a directory that a
// decoder recognizes as a whole (a capture) is one input; any other directory
// is walked.
func expand(path string, decoders []Decoder) ([]*Input, []Warning, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, &InputError{path, unwrapPathError(err)}
	}
	if !st.IsDir() {
		in, err := NewInput(path)
		if err != nil {
			return nil, nil, err
		}
		return []*Input{in}, nil, nil
	}
	dirIn := &Input{Path: path, Dir: true}
	for _, d := range decoders {
		if d.Sniff(dirIn) {
			return []*Input{dirIn}, nil, nil
		}
	}
	var inputs []*Input
	var skipped []Warning
	err = filepath.WalkDir(path, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return &InputError{p, unwrapPathError(err)}
		}
		name := de.Name()
		if p != path && strings.HasPrefix(name, ".") {
			if de.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			if p == path {
				return nil
			}
			sub := &Input{Path: p, Dir: true}
			for _, d := range decoders {
				if d.Sniff(sub) {
					inputs = append(inputs, sub)
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !de.Type().IsRegular() {
			return nil
		}
		in, err := NewInput(p)
		if err != nil {
			return err
		}
		for _, d := range decoders {
			if d.Sniff(in) {
				inputs = append(inputs, in)
				return nil
			}
		}
		skipped = append(skipped, Warning{Path: p, Code: "skipped-file",
			Msg: fmt.Sprintf("skipped: %s (%s)", ErrUnknownFormat, describeHead(in))})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(inputs, func(a, b *Input) int { return strings.Compare(a.Path, b.Path) })
	return inputs, skipped, nil
}

// NewInput stats a file and reads its head, undoing whole-file compression.
func NewInput(path string) (*Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &InputError{path, unwrapPathError(err)}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &InputError{path, err}
	}
	in := &Input{Path: path, Size: st.Size()}
	raw := make([]byte, HeadSize)
	n, err := io.ReadFull(f, raw)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, &InputError{path, err}
	}
	raw = raw[:n]
	switch {
	case bytes.HasPrefix(raw, gzipMagic):
		in.Compression = CompressionGzip
	case bytes.HasPrefix(raw, zstdMagic):
		in.Compression = CompressionZstd
	default:
		in.Head = raw
		return in, nil
	}
	rc, err := in.Open()
	if err != nil {
		return nil, &InputError{path, err}
	}
	defer rc.Close()
	head := make([]byte, HeadSize)
	n, err = io.ReadFull(rc, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		// A truncated compressed file still offers what decompressed.
		if n == 0 {
			return nil, &InputError{path, fmt.Errorf("%s: %w", in.Compression, err)}
		}
	}
	in.Head = head[:n]
	return in, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// describeHead says in a few words what a file looks like, for error messages.
func describeHead(in *Input) string {
	h := in.Head
	prefix := ""
	if in.Compression != CompressionNone {
		prefix = in.Compression.String() + ", "
	}
	switch {
	case in.Dir:
		return "a directory without manifest.json"
	case len(h) == 0:
		return prefix + "empty file"
	case bytes.HasPrefix(h, []byte("SQLite format 3\x00")):
		return prefix + "an SQLite database, but not an Nsight Systems export"
	}
	trimmed := bytes.TrimLeft(h, " \t\r\n\xef\xbb\xbf")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return prefix + "JSON, but not OTLP, Jaeger or Tempo trace JSON"
	}
	n := min(len(h), 8)
	return fmt.Sprintf("%sstarts with bytes % x", prefix, h[:n])
}
