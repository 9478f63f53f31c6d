package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
)

// AnalysisSchema is the schema of a saved analysis (`analyze --format
// json`), whose "samples" key holds the run diff compares and whose
// "warnings" the input problems analyze found.
const AnalysisSchema = "llmprof.report/v1"

// A RunDecoder is one kind of input that diff and history read runs from:
// llmprof's own run files (saved analyses, samples files), benchmark
// results, or a raw trace that the analysis pipeline turns into a run. The
// table of them, in sniffing order, is internal/driver/decoders.go
// (driver.RunDecoders), beside the trace decoders; RunFileDecoders are the
// ones this package reads itself.
type RunDecoder interface {
	// Name names the format.
	Name() string
	// Sniff reports whether in is of this format, from its head (a file)
	// or its listing (a directory).
	Sniff(in *ingest.Input) bool
	// DecodeRuns reads in's runs, with their warnings and notes, into
	// out; its errors name in.Path.
	DecodeRuns(ctx context.Context, in *ingest.Input, out *Input) error
	// RawTrace reports whether its inputs are raw traces, analyzed into
	// one run each, rather than files of runs: a directory that one of
	// them reads is one run, not a series.
	RawTrace() bool
}

// LoadOptions tell Load what it can read.
type LoadOptions struct {
	// Inputs are the run decoders, in sniffing order
	// (driver.RunDecoders); nil means RunFileDecoders, without which a raw
	// trace is an error naming it. An input none of them sniffs goes to
	// the first raw-trace decoder, which says in analyze's words what it
	// is not.
	Inputs []RunDecoder
}

// RunFileDecoders are the run files Load reads without the analysis
// pipeline, in sniffing order: saved analyses and samples files (by their
// schema), `vllm bench serve` results, vLLM's nightly summary table (refused
// with a pointer to the per-run files), and JSON without a schema
// (hand-written samples). driver.RunDecoders puts the raw traces before the
// last.
func RunFileDecoders() []RunDecoder {
	return []RunDecoder{SavedRuns(), VLLMBench(), VLLMSummary(), UnmarkedSamples()}
}

func (o LoadOptions) inputs() []RunDecoder {
	if o.Inputs == nil {
		return RunFileDecoders()
	}
	return o.Inputs
}

// sniff is the first input that sniffs in, nil if none does.
func (o LoadOptions) sniff(in *ingest.Input) RunDecoder {
	for _, d := range o.inputs() {
		if d.Sniff(in) {
			return d
		}
	}
	return nil
}

// sniffedRaw reports whether a raw-trace input sniffs in.
func (o LoadOptions) sniffedRaw(in *ingest.Input) bool {
	return slices.ContainsFunc(o.inputs(), func(d RunDecoder) bool { return d.RawTrace() && d.Sniff(in) })
}

// raw reads in with the first raw-trace input, whether or not it sniffed
// it: the analysis pipeline says what the input is, or is not.
func (o LoadOptions) raw(ctx context.Context, in *ingest.Input, out *Input) error {
	i := slices.IndexFunc(o.inputs(), RunDecoder.RawTrace)
	if i < 0 {
		return fmt.Errorf("%s: a raw trace input; analyze it first (llmprof analyze --format json)", in.Path)
	}
	return o.inputs()[i].DecodeRuns(ctx, in, out)
}

// head is the start of a file's text, past white space and a byte-order
// mark.
func head(in *ingest.Input) []byte { return bytes.TrimLeft(in.Head, " \t\r\n\xef\xbb\xbf") }

// runFile is a RunDecoder of a file of runs this package reads, known by
// its head (past white space and a byte-order mark; never empty).
type runFile struct {
	name  string
	sniff func(head []byte) bool
	read  func(out *Input, in *ingest.Input) error
}

func (r runFile) Name() string   { return r.name }
func (r runFile) RawTrace() bool { return false }
func (r runFile) Sniff(in *ingest.Input) bool {
	h := head(in)
	return len(h) > 0 && r.sniff(h)
}
func (r runFile) DecodeRuns(_ context.Context, in *ingest.Input, out *Input) error {
	return r.read(out, in)
}

// SavedRuns reads llmprof's own run files, known by their schema: a saved
// analysis (`analyze --format json`, AnalysisSchema) and a samples file
// (SamplesSchema), and refuses the other llmprof documents with a reason.
func SavedRuns() RunDecoder { return runFile{"llmprof-runs", isSamplesHead, (*Input).loadSamples} }

// UnmarkedSamples reads JSON without a schema marker as hand-written
// samples (one run or an array of runs); it comes after every other JSON
// format.
func UnmarkedSamples() RunDecoder {
	return runFile{"samples", func(h []byte) bool { return h[0] == '{' || h[0] == '[' }, (*Input).loadSamples}
}

// VLLMBench reads a `vllm bench serve --save-result` file (see vllmBench),
// one run per result.
func VLLMBench() RunDecoder {
	return runFile{"vllm-bench", func(h []byte) bool { return ingest.BenchResultKind(h) == ingest.BenchServe }, (*Input).loadVLLMBench}
}

// VLLMSummary is the summary table of vLLM's nightly benchmark, which holds
// no per-request figures: it is refused with a pointer to the files that
// do.
func VLLMSummary() RunDecoder {
	return runFile{"vllm-bench-summary", func(h []byte) bool { return ingest.BenchResultKind(h) == ingest.BenchSummary },
		func(_ *Input, in *ingest.Input) error { return fmt.Errorf(vllmSummaryError, in.Path) }}
}

// Input is what Load read for one side.
type Input struct {
	Runs []Run
	// Warnings are the inputs' own problems (truncation, an interrupted
	// capture, malformed records), "path: message".
	Warnings []string
	// Notes say what an input cannot do (a benchmark result has no
	// attribution to explain a change with); they are not problems.
	Notes []string
	// Files are the regular files and directories read, for telling
	// whether both sides read the same input.
	Files []string
	infos []os.FileInfo
}

// Load reads one side: each path is a saved analysis, a samples file (one
// run or an array of runs), a `vllm bench serve --save-result` file (one run
// per result; see vllmbench.go), a raw run that a decoder recognizes (a trace
// file or directory, analyzed as `analyze` would), or a directory of saved
// analyses, samples files and vllm bench results (a series read as
// LoadSeries reads one, in name order: one run per entry or per appended
// result, an entry that is not a run skipped with a warning).
// Errors name the path.
func Load(ctx context.Context, paths []string, opts LoadOptions) (*Input, error) {
	out := &Input{}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := out.load(ctx, p, opts); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (out *Input) load(ctx context.Context, p string, opts LoadOptions) error {
	st, err := os.Stat(p)
	if err != nil {
		return &ingest.InputError{Path: p, Err: unwrapPath(err)}
	}
	for _, prev := range out.infos {
		if os.SameFile(prev, st) {
			return nil // named twice (a baseline that is also in its history): read once
		}
	}
	out.infos = append(out.infos, st)
	out.Files = append(out.Files, p)
	if st.IsDir() {
		in := &ingest.Input{Path: p, Dir: true}
		if opts.sniffedRaw(in) || !holdsSamples(p, opts) {
			return opts.raw(ctx, in, out)
		}
		return out.loadSeries(ctx, p, opts)
	}
	in, err := ingest.NewInput(p)
	if err != nil {
		return err // an InputError names the path
	}
	if len(head(in)) == 0 {
		return fmt.Errorf("%s: empty file", p)
	}
	if d := opts.sniff(in); d != nil {
		return d.DecodeRuns(ctx, in, out)
	}
	// Neither a run file nor a format a decoder recognizes: the analysis
	// pipeline says what it is not, in analyze's words.
	return opts.raw(ctx, in, out)
}

// IsSeriesDir reports whether Load reads a directory as a series of runs
// (saved analyses, samples files, bench results, one run per entry; see
// holdsSamples) rather than as one raw run.
func IsSeriesDir(p string, opts LoadOptions) bool {
	st, err := os.Stat(p)
	if err != nil || !st.IsDir() {
		return false
	}
	return !opts.sniffedRaw(&ingest.Input{Path: p, Dir: true}) && holdsSamples(p, opts)
}

// isSamplesHead reports whether a JSON head carries one of llmprof's own
// schemas at its top level (a saved analysis, samples, or — to refuse it
// with a clear message — a diff report); in an array, its first element's.
func isSamplesHead(head []byte) bool {
	var s jsonscan.Scanner
	s.Reset(head)
	if s.Peek() == '[' {
		first := true
		if !s.Open('[') || !s.Elem(&first) {
			return false
		}
	}
	if s.Peek() != '{' || !s.Open('{') {
		return false
	}
	for first := true; s.Member(&first); {
		if string(s.Key()) == "schema" {
			v := s.Str()
			return s.Err() == nil && bytes.HasPrefix(v, []byte("llmprof."))
		}
		s.Skip()
	}
	return false
}

// holdsSamples reports whether a directory's files are saved analyses,
// samples files or bench results (a series of runs) rather than traces:
// no JSON file is first taken by a raw-trace input, and there is at least
// one; files that are not JSON do not count.
func holdsSamples(dir string, opts LoadOptions) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	found := false
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		in, err := ingest.NewInput(filepath.Join(dir, e.Name()))
		if err != nil {
			return false
		}
		h := head(in)
		if len(h) == 0 || (h[0] != '{' && h[0] != '[') {
			continue // not JSON (a README): LoadSeries skips it with a warning
		}
		if d := opts.sniff(in); d != nil && d.RawTrace() {
			return false
		}
		found = true
	}
	return found
}

// loadSeries reads a directory of runs (a baseline history, or several
// runs of one side) as LoadSeries reads one, in name order: every entry
// that is a run, the others skipped with a warning.
func (out *Input) loadSeries(ctx context.Context, dir string, opts LoadOptions) error {
	s := &RunSeries{seen: out.infos}
	if err := s.loadDir(ctx, dir, opts); err != nil {
		return err
	}
	out.infos = s.seen
	if len(s.Runs) == 0 {
		return fmt.Errorf("%s: no runs found", dir)
	}
	if _, err := s.Order(OrderName); err != nil {
		return err
	}
	out.Runs = append(out.Runs, s.CompareRuns()...)
	out.Warnings = append(out.Warnings, s.Warnings...)
	out.Notes = append(out.Notes, s.Notes...)
	return nil
}

func (out *Input) loadSamples(in *ingest.Input) error {
	p := in.Path
	runs, warns, err := readSamples(in)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	for i := range runs {
		if runs[i].RunID == "" {
			runs[i].RunID = p
			if len(runs) > 1 {
				runs[i].RunID = fmt.Sprintf("%s#%d", p, i+1)
			}
		}
	}
	out.Runs = append(out.Runs, runs...)
	for _, w := range warns {
		out.Warnings = append(out.Warnings, p+": "+w)
	}
	return nil
}

// readSamples decodes a JSON input that holds runs: a saved analysis (its
// "samples" and "warnings"), a samples file, or an array of runs. It reads
// the document once, with runDecoder: a top-level object is at the same
// time taken apart by member (its "schema", "samples" and "warnings",
// matched exactly) and read as one run (a samples file), and its schema
// then says which of the two it is.
func readSamples(in *ingest.Input) ([]Run, []string, error) {
	rc, err := in.Open()
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	return readSamplesFrom(rc)
}

// readSamplesFrom is readSamples of the text r reads.
func readSamplesFrom(r io.Reader) ([]Run, []string, error) {
	s := &jsonscan.Scanner{MaxDepth: maxJSONDepth}
	s.ResetReader(r)
	switch s.Peek() {
	case '[':
		d := runDecoder{s: s}
		runs := d.runs()
		if err := endDocument(s); err != nil {
			return nil, nil, err
		}
		if d.err != nil {
			return nil, nil, fmt.Errorf("not an array of runs (%s): %w", SamplesSchema, d.err)
		}
		return runs, nil, nil
	case '{':
	default:
		s.Skip()
		if err := endDocument(s); err != nil {
			return nil, nil, err
		}
		return nil, nil, errors.New("not a JSON object")
	}

	var (
		top        runJSON // the document as one run
		asRun      = runDecoder{s: s}
		samples    []Run // its last "samples", read as runs
		samplesErr error
		hasSamples bool
		nullSample bool
		schemaRaw  []byte // its last "schema", and "warnings"
		warnRaw    []byte
		hasSchema  bool
		hasWarns   bool
		hasReqs    bool
	)
	s.Open('{')
	for first := true; s.Member(&first); {
		// Neither "samples" nor "warnings" is a member of a run (see
		// TestRunDecoderTopMembers): read as a run, the document ignores
		// them.
		switch k := s.Key(); string(k) {
		case "samples":
			hasSamples, nullSample = true, s.Peek() == 'n'
			d := runDecoder{s: s, buf: asRun.buf}
			samples, samplesErr = d.runs(), d.err
			asRun.buf = d.buf
		case "warnings":
			hasWarns = true
			warnRaw = append(warnRaw[:0], s.RawValue()...)
		case "schema":
			hasSchema = true
			schemaRaw = append(schemaRaw[:0], s.RawValue()...)
			if s.Err() == nil && asRun.err == nil {
				// The run's own schema member, read again from its copy.
				sub := &jsonscan.Scanner{MaxDepth: maxJSONDepth}
				sub.ResetAt(schemaRaw, 0, 1)
				d := runDecoder{s: sub}
				d.member(&top, []byte("schema"))
				asRun.err = d.err
			}
		default:
			hasReqs = hasReqs || string(k) == "requests"
			asRun.member(&top, k)
		}
	}
	if err := endDocument(s); err != nil {
		return nil, nil, err
	}
	asRunResult := func() ([]Run, []string, error) {
		if asRun.err == nil && top.Schema != "" && top.Schema != SamplesSchema {
			asRun.err = &SchemaError{Got: top.Schema, Want: SamplesSchema}
		}
		if asRun.err != nil {
			return nil, nil, asRun.err
		}
		return []Run{Run(top.runFields)}, nil, nil
	}

	var schema string
	if hasSchema {
		if err := json.Unmarshal(schemaRaw, &schema); err != nil {
			return nil, nil, fmt.Errorf("schema is not a string: %s", schemaRaw)
		}
	}
	switch {
	case schema == AnalysisSchema:
		if !hasSamples || nullSample {
			return nil, nil, errors.New(`saved analysis has no "samples" (write it again with this llmprof's analyze --format json)`)
		}
		if samplesErr != nil {
			return nil, nil, fmt.Errorf("samples: %w", samplesErr)
		}
		var warns []ingest.Warning
		if hasWarns {
			if err := json.Unmarshal(warnRaw, &warns); err != nil {
				return nil, nil, fmt.Errorf("warnings: %w", err)
			}
		}
		var msgs []string
		for _, w := range warns {
			msgs = append(msgs, w.String())
		}
		return samples, msgs, nil
	case strings.HasPrefix(schema, "llmprof.report/"):
		return nil, nil, fmt.Errorf("saved analysis schema %q is not supported (this llmprof reads %q); write it again with this llmprof", schema, AnalysisSchema)
	case strings.HasPrefix(schema, "llmprof.samples/"):
		return asRunResult()
	case strings.HasPrefix(schema, "llmprof.diff/"):
		return nil, nil, errors.New("is a diff report, not an analysis: diff compares analyses")
	case schema != "":
		return nil, nil, fmt.Errorf("unknown schema %q (want a saved analysis %q or samples %q)", schema, AnalysisSchema, SamplesSchema)
	}
	if hasReqs {
		return asRunResult()
	}
	return nil, nil, fmt.Errorf("not a saved analysis (%s) or samples file (%s)", AnalysisSchema, SamplesSchema)
}

// endDocument checks the document read by s: its syntax, and that nothing
// but white space follows it.
func endDocument(s *jsonscan.Scanner) error {
	if err := s.Err(); err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if s.More() {
		return errTrailing
	}
	if err := s.Err(); err != nil { // a read error past the value
		return fmt.Errorf("not valid JSON: %w", err)
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// SameInput reports whether two sides read the same files (the same path,
// or the same file under two names): a comparison of an input with itself
// proves nothing.
func SameInput(a, b *Input) (string, bool) {
	if len(a.Files) == 0 || len(a.Files) != len(b.Files) {
		return "", false
	}
	for i := range a.Files {
		sa, err1 := os.Stat(a.Files[i])
		sb, err2 := os.Stat(b.Files[i])
		if err1 != nil || err2 != nil || !os.SameFile(sa, sb) {
			return "", false
		}
	}
	return strings.Join(a.Files, ","), true
}
