package compare

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/llmprof/llmprof/internal/jsonscan"
)

// A saved analysis is mostly its runs' per-request arrays: tens of
// megabytes of numbers. runDecoder reads runs straight off a
// jsonscan.Scanner, once, instead of through encoding/json (which, behind a
// json.Decoder, scanned the document three times and went through
// reflection for every member). It gives the Run that json.Unmarshal into
// runJSON gives, and an error where it gives one, for every input:
// rundecode_test.go checks it against encoding/json on saved analyses and
// on mutated documents. What that takes is encoding/json's rules, kept
// here on purpose:
//
//   - member names are matched as encoding/json matches them: exactly, or
//     else case-insensitively (its foldName, below); unknown members are
//     ignored, and of a member named twice the last wins;
//   - null leaves a string, number or boolean as it was (an earlier member
//     of the same name may have set it) and makes a series, list or map
//     nil;
//   - a list named twice is decoded into the slice the first one left, as
//     encoding/json does: elements the second does not set (null) keep
//     what the first put there, and a map named twice gathers the members
//     of both;
//   - strings come back with invalid UTF-8 replaced by U+FFFD, byte by
//     byte;
//   - a number that does not fit its field (an integer with a fraction or
//     out of int's range, a float past float64's) is an error;
//   - a value of the wrong kind is an error, and so, as Series.UnmarshalJSON
//     has it, is a series element that is not a number or null.
//
// Errors name the member. The scanner checks the syntax of everything it
// passes over, nesting is bounded as in encoding/json (maxJSONDepth), and a
// value of the wrong kind does not stop the scan, so a syntax error later in
// the document is still found.
type runDecoder struct {
	s *jsonscan.Scanner
	// err is the first value of the wrong kind (or SchemaError): the
	// runs are refused, but the scan goes on.
	err error
	buf Series // scratch for a series being read
}

// maxJSONDepth is encoding/json's bound on nesting, which the readers of
// run files keep so that they refuse no document it accepts.
const maxJSONDepth = 10000

// wrong records the first value of the wrong kind.
func (d *runDecoder) wrong(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

// runField is a member of a run in JSON (runJSON's fields).
type runField uint8

const (
	fNone runField = iota
	fSchema
	fRunID
	fModels
	fDuration
	fRequests
	fCompleted
	fSLO
	fGood
	fTTFT
	fTPOT
	fE2E
	fQueue
	fOutputTokens
	fInputTokens
	fArrival
	fITL
	fITLCounts
	fStages
	fTokens
	fFirstToken
	fTenants
	fTokensEstimated
	nRunFields
)

// runFieldNames are the fields' JSON names, as runJSON's tags spell them
// (rundecode_test.go checks the two agree).
var runFieldNames = [nRunFields]string{
	fSchema: "schema", fRunID: "run_id", fModels: "models", fDuration: "duration_ms",
	fRequests: "requests", fCompleted: "completed", fSLO: "slo", fGood: "good",
	fTTFT: "ttft_ms", fTPOT: "tpot_ms", fE2E: "e2e_ms", fQueue: "queue_ms",
	fOutputTokens: "output_tokens", fInputTokens: "input_tokens", fArrival: "arrival_ms",
	fITL: "itl_ms", fITLCounts: "itl_counts", fStages: "stages_ms", fTokens: "tokens_ms",
	fFirstToken: "first_token_ms", fTenants: "tenants_ms", fTokensEstimated: "tokens_estimated",
}

// runFieldsByName finds a field by its exact name, runFieldsFolded by its
// name folded as encoding/json folds member names.
var runFieldsByName, runFieldsFolded = func() (exact, folded map[string]runField) {
	exact, folded = map[string]runField{}, map[string]runField{}
	for f := fNone + 1; f < nRunFields; f++ {
		exact[runFieldNames[f]] = f
		folded[string(foldName(nil, []byte(runFieldNames[f])))] = f
	}
	return exact, folded
}()

// lookupRunField is the field a member name selects, fNone if none (the
// member is ignored): encoding/json's exact match, then its folded one.
func lookupRunField(key []byte) runField {
	if f, ok := runFieldsByName[string(key)]; ok {
		return f
	}
	var arr [32]byte
	return runFieldsFolded[string(foldName(arr[:0], key))]
}

// foldName is encoding/json's foldName (encoding/json/fold.go): ASCII
// letters upper-cased, any other rune replaced by the smallest rune of its
// case-folding orbit, so that "ſlo" (long s) and "SLO" both select slo and
// the Kelvin sign is a K.
func foldName(out, in []byte) []byte {
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				r = r2
				break
			}
			r = r2
		}
		out = utf8.AppendRune(out, r)
		i += n
	}
	return out
}

// validString is b as encoding/json unquotes it: each byte that does not
// start a valid UTF-8 sequence becomes U+FFFD.
func validString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return string(out)
}

// run reads one run as Run.UnmarshalJSON reads it: an object, or null for
// the zero run; a schema other than SamplesSchema is refused.
func (d *runDecoder) run() Run {
	var v runJSON
	switch d.s.Peek() {
	case '{':
		d.s.Open('{')
		for first := true; d.s.Member(&first); {
			d.member(&v, d.s.Key())
		}
	case 'n':
		d.s.Literal()
	default:
		d.wrong("want a run (an object)")
		d.s.Skip()
	}
	if d.err == nil && v.Schema != "" && v.Schema != SamplesSchema {
		d.err = &SchemaError{Got: v.Schema, Want: SamplesSchema}
	}
	return Run(v.runFields)
}

// runs reads a run or an array of them (decodeRuns' rules).
func (d *runDecoder) runs() []Run {
	if d.s.Peek() != '[' {
		return []Run{d.run()}
	}
	d.s.Open('[')
	var out []Run
	for first := true; d.s.Elem(&first); {
		had := d.err != nil
		out = append(out, d.run())
		if !had && d.err != nil {
			d.err = fmt.Errorf("run %d: %w", len(out), d.err)
		}
	}
	if len(out) == 0 {
		d.wrong("no runs in the array")
	}
	return out
}

// member reads the value of the member named key into v; key is read
// before the value, so it may be the scanner's view.
func (d *runDecoder) member(v *runJSON, key []byte) {
	f := lookupRunField(key)
	if f == fNone || d.err != nil {
		// Unknown, or the run is refused already: only the syntax counts.
		d.s.Skip()
		return
	}
	switch f {
	case fSchema:
		d.str(&v.Schema)
	case fRunID:
		d.str(&v.RunID)
	case fModels:
		decodeList(d, &v.Models, d.str)
	case fDuration:
		d.float(&v.DurationMS)
	case fRequests:
		d.integer(&v.Requests)
	case fCompleted:
		d.integer(&v.Completed)
	case fSLO:
		d.str(&v.SLO)
	case fGood:
		d.integer(&v.Good)
	case fTTFT:
		v.TTFT = d.series()
	case fTPOT:
		v.TPOT = d.series()
	case fE2E:
		v.E2E = d.series()
	case fQueue:
		v.Queue = d.series()
	case fOutputTokens:
		v.OutputTokens = d.series()
	case fInputTokens:
		v.InputTokens = d.series()
	case fArrival:
		v.ArrivalMS = d.series()
	case fITL:
		v.ITL = d.series()
	case fITLCounts:
		decodeList(d, &v.ITLCounts, d.integer)
	case fStages:
		d.seriesMap(&v.Stages)
	case fTokens:
		d.seriesMap(&v.Tokens)
	case fFirstToken:
		d.seriesMap(&v.FirstToken)
	case fTenants:
		d.seriesMap(&v.Tenants)
	case fTokensEstimated:
		d.boolean(&v.TokensEstimated)
	}
	if d.err != nil {
		d.err = fmt.Errorf("%s: %w", runFieldNames[f], d.err)
	}
}

// kind names the JSON value starting with c, for an error.
func kind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// wrongKind records a value of the wrong kind and passes over it.
func (d *runDecoder) wrongKind(want string) {
	d.wrong("want %s, not %s", want, kind(d.s.Peek()))
	d.s.Skip()
}

func isNumberStart(c byte) bool { return c == '-' || c >= '0' && c <= '9' }

func (d *runDecoder) str(dst *string) {
	switch d.s.Peek() {
	case '"':
		if b := d.s.Str(); d.s.Err() == nil {
			*dst = validString(b)
		}
	case 'n':
		d.s.Literal() // null leaves it as it was
	default:
		d.wrongKind("a string")
	}
}

func (d *runDecoder) integer(dst *int) {
	switch c := d.s.Peek(); {
	case isNumberStart(c):
		b := d.s.Number()
		if d.s.Err() != nil {
			return
		}
		n, err := strconv.ParseInt(string(b), 10, 0)
		if err != nil {
			d.wrong("%s is not an integer in range", jsonscan.Truncate(b))
			return
		}
		*dst = int(n)
	case c == 'n':
		d.s.Literal()
	default:
		d.wrongKind("an integer")
	}
}

func (d *runDecoder) float(dst *float64) {
	switch c := d.s.Peek(); {
	case isNumberStart(c):
		b := d.s.Number()
		if d.s.Err() != nil {
			return
		}
		v, ok := parseFloat(b)
		if !ok {
			d.wrong("%s is out of range", jsonscan.Truncate(b))
			return
		}
		*dst = v
	case c == 'n':
		d.s.Literal()
	default:
		d.wrongKind("a number")
	}
}

func (d *runDecoder) boolean(dst *bool) {
	switch d.s.Peek() {
	case 't', 'f':
		*dst, _ = d.s.Literal()
	case 'n':
		d.s.Literal()
	default:
		d.wrongKind("true or false")
	}
}

// decodeList reads an array into *dst, or null as nil, as encoding/json
// decodes into a slice: into the slice already there, the elements past
// the array's end dropped by shortening it (a later array may lengthen it
// over them again) and an empty array making a new empty slice.
func decodeList[T any](d *runDecoder, dst *[]T, elem func(*T)) {
	switch d.s.Peek() {
	case '[':
	case 'n':
		d.s.Literal()
		*dst = nil
		return
	default:
		d.wrongKind("an array")
		return
	}
	d.s.Open('[')
	v := *dst
	i := 0
	for first := true; d.s.Elem(&first); i++ {
		if i >= len(v) {
			if i < cap(v) {
				v = v[:i+1]
			} else {
				var zero T
				v = append(v, zero)
			}
		}
		had := d.err != nil
		elem(&v[i])
		if !had && d.err != nil {
			d.err = fmt.Errorf("element %d: %w", i, d.err)
		}
	}
	if i < len(v) {
		v = v[:i]
	}
	if i == 0 {
		v = []T{}
	}
	*dst = v
}

// seriesMap reads an object of series into *dst, or null as nil; members
// are added to the map already there, as encoding/json adds them.
func (d *runDecoder) seriesMap(dst *map[string]Series) {
	switch d.s.Peek() {
	case '{':
	case 'n':
		d.s.Literal()
		*dst = nil
		return
	default:
		d.wrongKind("an object of series")
		return
	}
	d.s.Open('{')
	m := *dst
	if m == nil {
		m = map[string]Series{}
	}
	for first := true; d.s.Member(&first); {
		k := validString(d.s.Key())
		had := d.err != nil
		m[k] = d.series()
		if !had && d.err != nil {
			d.err = fmt.Errorf("%q: %w", k, d.err)
		}
	}
	*dst = m
}

// series reads a Series as Series.UnmarshalJSON does: an array of numbers
// and nulls (NaN), or null for nil.
func (d *runDecoder) series() Series {
	s := d.s
	switch s.Peek() {
	case '[':
	case 'n':
		s.Literal()
		return nil
	default:
		d.wrongKind("an array of numbers and nulls")
		return nil
	}
	s.Open('[')
	buf := d.buf[:0]
	for first := true; s.Elem(&first); {
		switch c := s.Peek(); {
		case isNumberStart(c):
			b := s.Number()
			v, ok := parseFloat(b)
			if !ok && s.Err() == nil {
				d.wrong("element %d: %s is out of range", len(buf), jsonscan.Truncate(b))
			}
			buf = append(buf, v)
		case c == 'n':
			s.Literal()
			buf = append(buf, math.NaN())
		default:
			d.wrong("element %d: %s is not a number or null", len(buf), kind(c))
			s.Skip()
			buf = append(buf, 0)
		}
	}
	d.buf = buf
	out := make(Series, len(buf))
	copy(out, buf)
	return out
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat is strconv.ParseFloat(string(b), 64) of a JSON number, false
// where that errs (out of range). A number of at most 15 significant
// digits whose decimal exponent is within ±22 is an exact integer times or
// over an exact power of ten, so one rounding gives the correctly rounded
// result that strconv gives (its own fast path, atof64exact); any other
// goes to strconv.
func parseFloat(b []byte) (float64, bool) {
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		neg, i = true, 1
	}
	var mant uint64
	digits, exp := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if mant != 0 || b[i] != '0' {
			digits++
		}
		mant = mant*10 + uint64(b[i]-'0')
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if mant != 0 || b[i] != '0' {
				digits++
			}
			mant = mant*10 + uint64(b[i]-'0')
			exp--
		}
	}
	if i == len(b) && digits <= 15 && exp >= -22 {
		f := float64(mant)
		if exp < 0 {
			f /= pow10[-exp]
		}
		if neg {
			f = -f
		}
		return f, true
	}
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}

// errTrailing is a document followed by more than white space.
var errTrailing = errors.New("more than one JSON document: not a saved analysis or samples file")

// decodeRuns reads b, one whole JSON text, as a run or an array of runs.
func decodeRuns(b []byte) ([]Run, error) {
	s := &jsonscan.Scanner{MaxDepth: maxJSONDepth}
	s.Reset(b)
	d := runDecoder{s: s}
	runs := d.runs()
	if err := endDocument(s); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, d.err
	}
	return runs, nil
}

// vllmBenchFields are vllmBench's members as its tags name them.
var vllmBenchFields = []string{"backend", "endpoint_type", "model_id", "label", "date", "duration", "completed", "num_prompts",
	"request_rate", "max_concurrency", "input_lens", "output_lens", "start_times", "ttfts", "itls", "latencies", "errors"}

// vllmBenchByName and vllmBenchFolded find a member of vllmBench by its
// exact and its folded name, as runFieldsByName and runFieldsFolded do.
var vllmBenchByName, vllmBenchFolded = func() (exact, folded map[string]int) {
	exact, folded = map[string]int{}, map[string]int{}
	for i, n := range vllmBenchFields {
		exact[n] = i
		folded[string(foldName(nil, []byte(n)))] = i
	}
	return exact, folded
}()

// vllmBench reads one result of a `vllm bench serve` file into b, by
// runDecoder's rules (json.Decoder.Decode into a vllmBench's): an object,
// or null for nothing.
func (d *runDecoder) vllmBench(b *vllmBench) {
	switch d.s.Peek() {
	case '{':
	case 'n':
		d.s.Literal()
		return
	default:
		d.wrongKind("a result (an object)")
		return
	}
	d.s.Open('{')
	for first := true; d.s.Member(&first); {
		key := d.s.Key()
		i, ok := vllmBenchByName[string(key)]
		if !ok {
			var arr [32]byte
			i, ok = vllmBenchFolded[string(foldName(arr[:0], key))]
		}
		if !ok || d.err != nil {
			d.s.Skip()
			continue
		}
		switch vllmBenchFields[i] {
		case "backend":
			d.str(&b.Backend)
		case "endpoint_type":
			d.str(&b.EndpointType)
		case "model_id":
			d.str(&b.ModelID)
		case "label":
			d.str(&b.Label)
		case "date":
			d.str(&b.Date)
		case "duration":
			d.float(&b.Duration)
		case "completed":
			d.integer(&b.Completed)
		case "num_prompts":
			d.integer(&b.NumPrompts)
		case "request_rate":
			b.RequestRate = append(b.RequestRate[:0], d.s.RawValue()...)
		case "max_concurrency":
			b.MaxConcurrency = append(b.MaxConcurrency[:0], d.s.RawValue()...)
		case "input_lens":
			decodeList(d, &b.InputLens, d.integer)
		case "output_lens":
			decodeList(d, &b.OutputLens, d.integer)
		case "start_times":
			decodeList(d, &b.StartTimes, d.float)
		case "ttfts":
			decodeList(d, &b.TTFTs, d.float)
		case "latencies":
			decodeList(d, &b.Latencies, d.float)
		case "itls":
			decodeList(d, &b.ITLs, func(l *[]float64) { decodeList(d, l, d.float) })
		case "errors":
			decodeList(d, &b.Errors, d.strPtr)
		}
		if d.err != nil {
			d.err = fmt.Errorf("%s: %w", vllmBenchFields[i], d.err)
		}
	}
}

// strPtr reads a string into *dst, or null as nil.
func (d *runDecoder) strPtr(dst **string) {
	if d.s.Peek() == 'n' {
		d.s.Literal()
		*dst = nil
		return
	}
	var v string
	d.str(&v)
	*dst = &v
}

// nextVLLMBench reads the next result of a bench result file from s: io.EOF
// past the last.
func nextVLLMBench(s *jsonscan.Scanner) (vllmBench, error) {
	var b vllmBench
	if !s.More() {
		if err := s.Err(); err != nil {
			return b, err
		}
		return b, io.EOF
	}
	d := runDecoder{s: s}
	d.vllmBench(&b)
	if err := s.Err(); err != nil {
		return b, err
	}
	return b, d.err
}
