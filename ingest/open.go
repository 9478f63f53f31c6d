package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/term"
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

// StdinPath is the path that names standard input on the command line.
const StdinPath = "-"

// stdinName is what standard input is called in sources and messages.
const stdinName = "<stdin>"

// Input is one file or directory offered to the decoders.
//
// A regular file can be read many times: Open reopens it. Anything else
// (standard input, a pipe, a FIFO, process substitution, a character device)
// is read once: its head is sniffed from a buffer in front of the stream, and
// Open hands out that same stream, head included, to the one decoder that
// reads it.
type Input struct {
	Path string
	Dir  bool
	// Size of the file on disk (compressed size if compressed); for a
	// directory input (a capture), of the regular files below it; 0 for a
	// stream.
	Size int64
	// Compression wraps the whole file; Open undoes it.
	Compression Compression
	// Encoding is the text encoding Open converts to UTF-8 (a UTF-8
	// byte-order mark is dropped, UTF-16 with one is transcoded).
	Encoding Encoding
	// Head is the first HeadSize bytes of the decompressed, UTF-8 content
	// (less for a shorter file); empty for directories.
	Head []byte
	// Stream is set for an input that can be read only once; Open returns
	// its stream to the first caller and an error to any other.
	Stream bool

	stream io.ReadCloser
	taken  atomic.Bool
	// local, when set, is the regular file that holds the content (the
	// SQLite export of an .nsys-rep); Path still names the input.
	local string
	// cleanup removes what reading the input left behind (temporary files).
	cleanup []func()
	// spoolMax bounds the temporary copy LocalFile makes.
	spoolMax int64
	// metricLimits and metricTotal are the metric budget (MetricBudget).
	metricLimits MetricLimits
	metricTotal  *atomic.Int64
}

// Open returns the decompressed, UTF-8 content of a file input.
func (in *Input) Open() (io.ReadCloser, error) {
	if in.Stream {
		if in.taken.Swap(true) {
			return nil, errors.New("a stream can be read only once, and it has been read")
		}
		return in.stream, nil
	}
	path := in.Path
	if in.local != "" {
		path = in.local
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	r, closeAll, err := unwrap(f, in.Compression, in.Encoding)
	if err != nil {
		f.Close()
		return nil, err
	}
	return readCloser{r, func() error { closeAll(); return f.Close() }}, nil
}

// Close releases what the input holds: an unread stream and temporary files.
func (in *Input) Close() error {
	var err error
	if in.Stream && in.stream != nil {
		in.taken.Store(true)
		err = in.stream.Close()
	}
	for _, f := range in.cleanup {
		f()
	}
	in.cleanup = nil
	return err
}

// DefaultSpoolMax is the default bound of the temporary copy LocalFile makes
// of a compressed or streamed input.
const DefaultSpoolMax = 64 << 30

// LocalFile returns the path of a regular, uncompressed file holding the
// input's content, for a decoder that needs one (SQLite cannot read a
// stream): the file itself, or a temporary copy, at most the spool bound
// (DefaultSpoolMax unless OpenOptions.MaxSpoolBytes says otherwise), that
// done removes.
func (in *Input) LocalFile() (path string, done func(), err error) {
	if !in.Stream && in.Compression == CompressionNone && in.Encoding == EncodingUTF8 {
		if in.local != "" {
			return in.local, func() {}, nil
		}
		return in.Path, func() {}, nil
	}
	limit := in.spoolMax
	if limit <= 0 {
		limit = DefaultSpoolMax
	}
	rc, err := in.Open()
	if err != nil {
		return "", nil, err
	}
	defer rc.Close()
	f, err := os.CreateTemp("", "llmprof-input-*")
	if err != nil {
		return "", nil, err
	}
	remove := func() { os.Remove(f.Name()) }
	n, err := io.Copy(f, io.LimitReader(rc, limit+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		remove()
		return "", nil, fmt.Errorf("copying to a temporary file: %w", err)
	case n > limit:
		remove()
		return "", nil, fmt.Errorf("more than %d bytes to copy to a temporary file (the bound for a compressed or streamed input that must be read as a file)", limit)
	}
	return f.Name(), remove, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// unwrap undoes compression, then the text encoding, over raw.
func unwrap(raw io.Reader, c Compression, e Encoding) (io.Reader, func(), error) {
	r, closeZ := raw, func() {}
	switch c {
	case CompressionGzip:
		zr, err := NewGzipReader(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		r, closeZ = zr, func() { zr.Close() }
	case CompressionZstd:
		zr, err := zstd.NewReader(raw, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<30))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		r, closeZ = zr.IOReadCloser(), zr.Close
	}
	r, err := decodeText(r, e)
	if err != nil {
		closeZ()
		return nil, nil, err
	}
	return r, closeZ, nil
}

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
	// Expanded, if set, is called once the paths are expanded into the
	// inputs to decode (directories walked), before any is decoded: the
	// inputs' count and sizes are known from here on.
	Expanded func(inputs []*Input)
	// Progress, if set, is called after each input is decoded.
	Progress func(done, total int, in *Input)
	// Stdin is read for the path "-" (default os.Stdin).
	Stdin io.Reader
	// FIFOWait bounds how long opening a named pipe waits for its writer
	// (default DefaultFIFOWait).
	FIFOWait time.Duration
	// MaxSpoolBytes bounds the temporary copy of a streamed or compressed
	// input that a decoder must read as a file (default DefaultSpoolMax).
	MaxSpoolBytes int64
	// Metrics bounds the metric samples and series decoded from each input
	// and from all of them (see MetricLimits for the defaults); an input
	// past it is an error naming it.
	Metrics MetricLimits

	// metricTotal counts the metric bytes of all inputs of one Open.
	metricTotal *atomic.Int64
}

// DefaultFIFOWait is how long opening a named pipe waits for a writer.
const DefaultFIFOWait = 10 * time.Second

func (o *OpenOptions) fifoWait() time.Duration {
	if o.FIFOWait <= 0 {
		return DefaultFIFOWait
	}
	return o.FIFOWait
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

// ErrNothingToAnalyze is wrapped by Open's error when every input is empty
// or was skipped, so that there is nothing to analyze.
var ErrNothingToAnalyze = errors.New("nothing to analyze")

// Open decodes every path (files, "-" for standard input, or directories
// walked recursively, following symbolic links) with the decoder that
// recognizes it, in parallel, and merges the results in the order given,
// then runs Validate. Every input is read once. A file named explicitly that
// no decoder recognizes is an error; inside a directory it is skipped with a
// warning. When every input is empty or skipped, Open fails with an error
// naming each one and why (ErrNothingToAnalyze).
func Open(ctx context.Context, paths []string, decoders []Decoder, opts OpenOptions) (*Trace, error) {
	opts.metricTotal = new(atomic.Int64)
	w := newWalker(ctx, decoders, &opts)
	inputs, err := w.expandAll(paths)
	defer func() {
		for _, in := range inputs {
			in.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	if len(inputs) == 0 {
		return nil, nothingError(paths, nil, w.skipped)
	}
	if opts.Expanded != nil {
		opts.Expanded(inputs)
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
			parts[i], errs[i] = decodeOne(ctx, in, decoders, &opts)
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, len(inputs), in)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if allEmpty(parts) {
		return nil, nothingError(paths, parts, w.skipped)
	}
	t := Merge(parts...)
	for _, w := range w.skipped {
		t.Warnings.Add(w)
	}
	dropDuplicateSpans(t)
	t.Validate()
	return t, nil
}

func allEmpty(parts []*Trace) bool {
	for _, p := range parts {
		if len(p.Sources) != 1 || p.Sources[0].Format != formatEmpty {
			return false
		}
	}
	return true
}

// nothingError says, for each input, why it could not be analyzed.
func nothingError(paths []string, parts []*Trace, skipped []Warning) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s", ErrNothingToAnalyze, strings.Join(paths, ", "))
	for _, p := range parts {
		for _, w := range p.Warnings.List {
			fmt.Fprintf(&b, "\n  %s", w)
		}
	}
	writeSkipped(&b, skipped)
	if len(parts) == 0 && len(skipped) == 0 {
		b.WriteString(" (no files)")
	}
	errs := []error{ErrNothingToAnalyze}
	if len(skipped) > 0 && len(parts) == 0 {
		// Only files that were skipped: none in a format llmprof reads.
		errs = append(errs, ErrUnknownFormat)
	}
	return wrappedMessage{b.String(), errs}
}

// skippedListed is how many skipped files nothingError lists one by one;
// beyond it, it writes one line per directory (a walk of /etc skips a
// thousand files, and each line would repeat the list of formats).
const skippedListed = 5

// writeSkipped lists the skipped files, or with more than skippedListed of
// them, each directory once with its count and its first file's reason;
// the list of formats llmprof reads, which every unknown-format reason ends
// with, is written once at the end.
func writeSkipped(b *strings.Builder, skipped []Warning) {
	if len(skipped) <= skippedListed {
		for _, w := range skipped {
			fmt.Fprintf(b, "\n  %s", w)
		}
		return
	}
	var dirs []string
	count := map[string]int{}
	first := map[string]Warning{}
	reads := ""
	for _, w := range skipped {
		d := filepath.Dir(w.Path)
		if count[d] == 0 {
			dirs = append(dirs, d)
			first[d] = w
		}
		count[d]++
	}
	for _, d := range dirs {
		w := first[d]
		msg := w.Msg
		if i := strings.Index(msg, "; llmprof reads "); i >= 0 {
			msg, reads = msg[:i], msg[i+2:]
		}
		msg = strings.TrimPrefix(msg, "skipped: ")
		if count[d] == 1 {
			fmt.Fprintf(b, "\n  %s: skipped: %s", w.Path, msg)
			continue
		}
		fmt.Fprintf(b, "\n  %s: %d files skipped (first, %s: %s)", d, count[d], filepath.Base(w.Path), msg)
	}
	if reads != "" {
		fmt.Fprintf(b, "\n  %s", reads)
	}
}

// wrappedMessage is an error with its own text that still matches errs.
type wrappedMessage struct {
	msg  string
	errs []error
}

func (e wrappedMessage) Error() string   { return e.msg }
func (e wrappedMessage) Unwrap() []error { return e.errs }

// formatEmpty is the Source.Format of an empty input.
const formatEmpty = "empty"

func decodeOne(ctx context.Context, in *Input, decoders []Decoder, opts *OpenOptions) (t *Trace, err error) {
	if !in.Dir && len(bytes.TrimSpace(in.Head)) == 0 {
		// An empty file holds no records; say so and keep the other inputs.
		t = New()
		t.Sources = []Source{{Path: in.Path, Format: formatEmpty}}
		if len(in.Head) == 0 {
			t.Warnf(0, "", "empty-file", "empty file: nothing to read")
		} else {
			t.Warnf(0, "", "empty-file", "only white space: nothing to read")
		}
		return t, nil
	}
	dec := sniffDecoder(in, decoders)
	var meta map[string]string
	if dec == nil && !in.Dir && isNsysReport(in.Head) {
		// An .nsys-rep: export it to SQLite and decode that.
		sqlite, err := exportNsysReport(ctx, in, opts)
		if err != nil {
			return nil, &InputError{in.Path, err}
		}
		defer sqlite.Close()
		in, dec = sqlite, sniffDecoder(sqlite, decoders)
		if dec == nil {
			return nil, &InputError{in.Path, fmt.Errorf("nsys export wrote %s, which no decoder in this build reads (%s)", sqlite.local, describeHead(sqlite))}
		}
		meta = map[string]string{"converted": "nsys export --type sqlite"}
	}
	if dec == nil {
		return nil, &InputError{in.Path, unknownFormatError(in, decoders)}
	}
	in.metricLimits, in.metricTotal = opts.Metrics, opts.metricTotal
	t = New()
	t.Sources = []Source{{Path: in.Path, Format: dec.Name(), Meta: meta}}
	defer func() {
		// A decoder must never panic on input; if one does, that is our bug,
		// but the user still gets a message naming the file, not a crash.
		if r := recover(); r != nil {
			err = &InputError{in.Path, fmt.Errorf("internal error in %s decoder: %v", dec.Name(), r)}
		}
	}()
	if err := dec.Decode(ctx, in, t); err != nil {
		if ctx.Err() != nil {
			return nil, &InputError{in.Path, ctx.Err()}
		}
		var ie *InputError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, &InputError{in.Path, err}
	}
	return t, nil
}

func sniffDecoder(in *Input, decoders []Decoder) Decoder {
	for _, d := range decoders {
		if d.Sniff(in) {
			return d
		}
	}
	return nil
}

// NewInput opens a file (or "-", standard input) and reads its head,
// undoing whole-file compression and a UTF-16 or UTF-8 byte-order mark. A
// regular file is closed again (Open reopens it); anything else is kept open
// as the input's one stream, so call Close on an input that is not decoded.
func NewInput(path string) (*Input, error) {
	return newInput(context.Background(), path, &OpenOptions{})
}

func newInput(ctx context.Context, path string, opts *OpenOptions) (*Input, error) {
	if path == StdinPath {
		r := opts.Stdin
		if r == nil {
			r = os.Stdin
		}
		if f, ok := r.(*os.File); ok && isTerminal(f) {
			return nil, &InputError{stdinName, errors.New("standard input is a terminal: pipe a trace into it (zcat traces.jsonl.gz | llmprof analyze -)")}
		}
		return newStreamInput(stdinName, io.NopCloser(r), opts)
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, &InputError{path, unwrapPathError(err)}
	}
	if !st.Mode().IsRegular() {
		if st.IsDir() {
			return nil, &InputError{path, errors.New("is a directory")}
		}
		f, err := openSpecial(ctx, path, st.Mode(), opts.fifoWait())
		if err != nil {
			return nil, &InputError{path, err}
		}
		in, err := newStreamInput(path, f, opts)
		if err != nil && ctx.Err() != nil {
			// The read was ended by the cancellation, not by the input.
			return nil, &InputError{path, ctx.Err()}
		}
		return in, err
	}
	in := &Input{Path: path, Size: st.Size(), spoolMax: opts.MaxSpoolBytes}
	raw, err := readHead(path)
	if err != nil {
		return nil, &InputError{path, err}
	}
	in.Compression = compressionOf(raw)
	head := raw
	if in.Compression != CompressionNone {
		if head, err = in.readHead(); err != nil {
			return nil, &InputError{path, err}
		}
	}
	if in.Encoding = encodingOf(head); in.Encoding != EncodingUTF8 {
		if head, err = in.readHead(); err != nil {
			return nil, &InputError{path, err}
		}
	}
	in.Head = head
	return in, nil
}

func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	defer f.Close()
	raw := make([]byte, HeadSize)
	n, err := io.ReadFull(f, raw)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	return raw[:n], nil
}

// readHead reads the head of the content through Open.
func (in *Input) readHead() ([]byte, error) {
	rc, err := in.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	head := make([]byte, HeadSize)
	n, err := io.ReadFull(rc, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF && n == 0 {
		// A truncated compressed file still offers what decompressed.
		return nil, fmt.Errorf("%s: %w", in.Compression, err)
	}
	return head[:n], nil
}

// newStreamInput reads the head of a stream through buffers that keep it, so
// that the decoder later reads the stream from its first byte.
func newStreamInput(path string, rc io.ReadCloser, opts *OpenOptions) (*Input, error) {
	in := &Input{Path: path, Stream: true, spoolMax: opts.MaxSpoolBytes}
	fail := func(err error) (*Input, error) {
		rc.Close()
		return nil, &InputError{path, err}
	}
	br := bufio.NewReaderSize(rc, HeadSize)
	raw, err := peekHead(br)
	if err != nil {
		return fail(err)
	}
	closers := []func(){}
	// The decoder closes the stream it reads, and the input's Close closes
	// it too, in case no decoder did: once.
	closeAll := sync.OnceValue(func() error {
		for _, c := range closers {
			c()
		}
		return rc.Close()
	})
	if in.Compression = compressionOf(raw); in.Compression != CompressionNone {
		r, closeZ, err := unwrap(br, in.Compression, EncodingUTF8)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, closeZ)
		br = bufio.NewReaderSize(r, HeadSize)
		if raw, err = peekHead(br); err != nil && len(raw) == 0 {
			closeZ()
			return fail(fmt.Errorf("%s: %w", in.Compression, err))
		}
	}
	if in.Encoding = encodingOf(raw); in.Encoding != EncodingUTF8 {
		r, err := decodeText(br, in.Encoding)
		if err != nil {
			closeAll()
			return nil, &InputError{path, err}
		}
		br = bufio.NewReaderSize(r, HeadSize)
		if raw, err = peekHead(br); err != nil {
			closeAll()
			return nil, &InputError{path, err}
		}
	}
	in.Head = bytes.Clone(raw)
	in.stream = readCloser{br, closeAll}
	return in, nil
}

// isTerminal reports whether f is a terminal, without f.Fd(), which would
// put a pipe back into blocking mode and so stop read deadlines working.
func isTerminal(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	rc.Control(func(fd uintptr) { tty = term.IsTerminal(int(fd)) })
	return tty
}

// peekHead returns up to HeadSize bytes without consuming them.
func peekHead(br *bufio.Reader) ([]byte, error) {
	head, err := br.Peek(HeadSize)
	if err == io.EOF || err == bufio.ErrBufferFull || err == io.ErrUnexpectedEOF {
		err = nil
	}
	return head, err
}

func compressionOf(raw []byte) Compression {
	switch {
	case bytes.HasPrefix(raw, gzipMagic):
		return CompressionGzip
	case bytes.HasPrefix(raw, zstdMagic):
		return CompressionZstd
	}
	return CompressionNone
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
