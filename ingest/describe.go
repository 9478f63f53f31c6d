package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrSavedOutput is wrapped by the error for an input that llmprof itself
// wrote (a saved analysis), which analyze does not read as a trace.
var ErrSavedOutput = errors.New("a saved llmprof output, not a trace")

// Describer is implemented by a decoder that can say, for error messages,
// what it reads ("OTLP traces (JSON, protobuf)"); otherwise its Name is used.
type Describer interface {
	Accepts() string
}

// knownAccepts says what the decoders that do not describe themselves read.
var knownAccepts = map[string]string{
	"capture": "llmprof record captures (directories)",
	"nsys":    "Nsight Systems SQLite exports (and .nsys-rep reports, exported with nsys when it is on PATH)",
	"kineto":  "PyTorch profiler (Kineto) traces",
}

// unknownFormatError says what an input looks like and what would have been
// accepted.
func unknownFormatError(in *Input, decoders []Decoder) error {
	if schema := savedSchema(in.Head); schema != "" {
		return fmt.Errorf("%w: JSON with \"schema\": %q; analyze reads traces and captures, while two saved analyses are compared with `llmprof diff BASE.json CANDIDATE.json`", ErrSavedOutput, schema)
	}
	if kind := benchResult(in.Head); kind != "" {
		return fmt.Errorf("%w: %s; analyze reads traces and captures, while two benchmark runs are compared with `llmprof diff BASE.json CANDIDATE.json`", ErrUnknownFormat, kind)
	}
	var accepts []string
	for _, d := range decoders {
		switch a, ok := d.(Describer); {
		case ok:
			accepts = append(accepts, a.Accepts())
		case knownAccepts[d.Name()] != "":
			accepts = append(accepts, knownAccepts[d.Name()])
		default:
			accepts = append(accepts, d.Name())
		}
	}
	return fmt.Errorf("%w: %s; llmprof reads %s", ErrUnknownFormat, describeHead(in), strings.Join(accepts, "; "))
}

// savedSchema is the "schema" of a JSON object that llmprof wrote
// (llmprof.report/v1 and its kin), or "".
func savedSchema(head []byte) string {
	text := bytes.TrimLeft(head, " \t\r\n")
	if len(text) == 0 || text[0] != '{' {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return ""
	}
	for range 8 {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ""
		}
		if key == "schema" {
			var s string
			if json.Unmarshal(v, &s) == nil && strings.HasPrefix(s, "llmprof.") {
				return s
			}
			return ""
		}
	}
	return ""
}

// nsysReportMagic starts every Nsight Systems report file (.nsys-rep, and the
// .qdrep of releases before 2021.4): the text "NVIDIA Tegra Profiler Report "
// and then the version that wrote it ("1." in 2023 reports, a build such as
// "2026@4@1@191-264138605071v0." in later ones), a newline and protobuf
// fields. It is matched on seven real reports written by nsys 2023-2024
// (ayush-os/nsight-systems-deep-dive nsys/*.nsys-rep, all starting "NVIDIA
// Tegra Profiler Report 1.\n") and on the header that tools which pick an nsys
// for a report read.
var nsysReportMagic = []byte("NVIDIA Tegra Profiler Report ")

func isNsysReport(head []byte) bool { return bytes.HasPrefix(head, nsysReportMagic) }

// nsysReportVersion is the Nsight Systems version that wrote a report, when
// its header names one ("2026.4.1.191"), or "".
func nsysReportVersion(head []byte) string {
	rest := head[len(nsysReportMagic):]
	end := bytes.IndexAny(rest, "-.\n")
	if end < 0 || !bytes.Contains(rest[:end], []byte("@")) {
		return ""
	}
	return strings.ReplaceAll(string(rest[:end]), "@", ".")
}

// describeHead says in a few words what a file looks like, for error messages.
func describeHead(in *Input) string {
	h := in.Head
	var prefix string
	if in.Compression != CompressionNone {
		prefix += in.Compression.String() + ", "
	}
	if in.Encoding == EncodingUTF16LE || in.Encoding == EncodingUTF16BE {
		prefix += in.Encoding.String() + ", "
	}
	switch {
	case in.Dir:
		return "a directory without manifest.json"
	case len(h) == 0:
		return prefix + "empty file"
	case bytes.HasPrefix(h, []byte("SQLite format 3\x00")):
		return prefix + "an SQLite database, but not an Nsight Systems export (it names none of its tables)"
	case isNsysReport(h):
		return prefix + "an Nsight Systems report"
	case len(bytes.Trim(h, "\x00")) == 0:
		return prefix + fmt.Sprintf("%d NUL bytes and nothing else (zero fill, as in /dev/zero or a preallocated file)", len(h))
	}
	text := bytes.TrimLeft(h, " \t\r\n")
	if len(text) > 0 && (text[0] == '{' || text[0] == '[') {
		return prefix + describeJSON(text)
	}
	if line := firstLine(h); line != "" {
		return prefix + "text starting " + strconv.Quote(line)
	}
	n := min(len(h), 8)
	return fmt.Sprintf("%sbinary data starting with bytes % x", prefix, h[:n])
}

// describeJSON names the top-level keys of a JSON object (or says it is an
// array), as far as the head reaches.
func describeJSON(text []byte) string {
	dec := json.NewDecoder(bytes.NewReader(text))
	tok, err := dec.Token()
	if err != nil {
		return "text starting with " + strconv.Quote(string(text[:1])) + " but not JSON"
	}
	if tok == json.Delim('[') {
		return "a JSON array"
	}
	var keys []string
	for len(keys) < 6 {
		key, err := dec.Token()
		k, ok := key.(string)
		if err != nil || !ok {
			break
		}
		keys = append(keys, strconv.Quote(k))
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
	}
	if len(keys) == 0 {
		return "a JSON object"
	}
	return "a JSON object with keys " + strings.Join(keys, ", ")
}

// firstLine is the first line of h, shortened, when h is printable text.
func firstLine(h []byte) string {
	line := h
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, "\r")
	if len(line) > 40 {
		line = line[:40]
		for len(line) > 0 && !utf8.Valid(line) {
			line = line[:len(line)-1]
		}
	}
	if len(line) == 0 || !utf8.Valid(line) {
		return ""
	}
	for _, r := range string(line) {
		if r < 0x20 && r != '\t' || r == 0x7f || r == utf8.RuneError {
			return ""
		}
	}
	return string(line)
}

// BenchKind is the kind of vLLM benchmark result a file's head shows.
type BenchKind int

const (
	// NotBench is anything else.
	NotBench BenchKind = iota
	// BenchServe is a `vllm bench serve` (benchmark_serving.py) result,
	// recognized by the keys its writer puts first (date,
	// endpoint_type/backend, label, model_id, …, num_prompts) and its
	// aggregate figures.
	BenchServe
	// BenchSummary is the nightly benchmark's summary table
	// (benchmark_results.json: a JSON array of one row of aggregates per
	// test, keyed "Test name", "Mean TTFT (ms)", …), with no per-request data.
	BenchSummary
)

// BenchResultKind recognizes a vLLM benchmark result from the head of its
// file: analyze points such a file to diff, and diff reads it
// (compare/vllmbench.go).
func BenchResultKind(head []byte) BenchKind {
	text := bytes.TrimLeft(head, " \t\r\n")
	if len(text) == 0 {
		return NotBench
	}
	has := func(k string) bool { return bytes.Contains(text, []byte(`"`+k+`"`)) }
	switch {
	case text[0] == '{' && has("num_prompts") && (has("backend") || has("endpoint_type")) &&
		(has("request_throughput") || has("ttfts") || has("latencies") || has("mean_ttft_ms")):
		return BenchServe
	case text[0] == '[' && bytes.HasPrefix(bytes.TrimLeft(text[1:], " \t\r\n"), []byte("{")) && has("Test name") &&
		(bytes.Contains(text, []byte(`TTFT (ms)"`)) || has("Tput (req/s)")):
		return BenchSummary
	}
	return NotBench
}

// benchResult says what a benchmark result is, for analyze's error ("" when
// the head is none).
func benchResult(head []byte) string {
	switch BenchResultKind(head) {
	case BenchServe:
		return "this is a `vllm bench serve` result (client-side latencies), not a trace"
	case BenchSummary:
		return "this is a table of vLLM benchmark results (one row per run, \"Mean TTFT (ms)\" …), not a trace; diff reads the runs' own `vllm bench serve` JSON files"
	}
	return ""
}
