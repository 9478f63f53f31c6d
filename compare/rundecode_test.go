package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// The reference: how readSamples read a document before runDecoder, with
// encoding/json alone (json.Unmarshal into runJSON for each run).

func refRun(b []byte) (Run, error) {
	var v runJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return Run{}, err
	}
	if v.Schema != "" && v.Schema != SamplesSchema {
		return Run{}, &SchemaError{Got: v.Schema, Want: SamplesSchema}
	}
	return Run(v.runFields), nil
}

func refDecodeRuns(b []byte) ([]Run, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(b, &raws); err != nil {
			return nil, err
		}
		if len(raws) == 0 {
			return nil, errors.New("no runs in the array")
		}
		runs := make([]Run, len(raws))
		for i, raw := range raws {
			r, err := refRun(raw)
			if err != nil {
				return nil, err
			}
			runs[i] = r
		}
		return runs, nil
	}
	r, err := refRun(b)
	if err != nil {
		return nil, err
	}
	return []Run{r}, nil
}

func refReadSamples(r io.Reader) ([]Run, []string, error) {
	dec := json.NewDecoder(r)
	var top json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("more than one document")
	}
	top = bytes.TrimSpace(top)
	if top[0] == '[' {
		runs, err := refDecodeRuns(top)
		return runs, nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(top, &keys); err != nil {
		return nil, nil, err
	}
	var schema string
	if s, ok := keys["schema"]; ok {
		if err := json.Unmarshal(s, &schema); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case schema == AnalysisSchema:
		samples, ok := keys["samples"]
		if !ok || string(bytes.TrimSpace(samples)) == "null" {
			return nil, nil, errors.New("no samples")
		}
		runs, err := refDecodeRuns(samples)
		if err != nil {
			return nil, nil, err
		}
		var warns []ingest.Warning
		if w, ok := keys["warnings"]; ok {
			if err := json.Unmarshal(w, &warns); err != nil {
				return nil, nil, err
			}
		}
		var msgs []string
		for _, w := range warns {
			msgs = append(msgs, w.String())
		}
		return runs, msgs, nil
	case strings.HasPrefix(schema, "llmprof.samples/"):
		runs, err := refDecodeRuns(top)
		return runs, nil, err
	case schema != "":
		return nil, nil, errors.New("other schema")
	}
	if _, ok := keys["requests"]; ok {
		runs, err := refDecodeRuns(top)
		return runs, nil, err
	}
	return nil, nil, errors.New("not runs")
}

// canonRun is a run with its series as the bits of their values, so that
// reflect.DeepEqual tells NaN from NaN and -0 from 0 as the bits do, and
// still tells a nil series or map from an empty one.
func canonRun(r Run) map[string]any {
	bits := func(s Series) []uint64 {
		if s == nil {
			return nil
		}
		out := make([]uint64, len(s))
		for i, v := range s {
			out[i] = math.Float64bits(v)
		}
		return out
	}
	out := map[string]any{}
	v := reflect.ValueOf(r)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		switch x := v.Field(i).Interface().(type) {
		case Series:
			out[name] = bits(x)
		case map[string]Series:
			var m map[string][]uint64
			if x != nil {
				m = map[string][]uint64{}
				for k, s := range x {
					m[k] = bits(s)
				}
			}
			out[name] = m
		default:
			out[name] = x
		}
	}
	return out
}

func canonRuns(rs []Run) []map[string]any {
	if rs == nil {
		return nil
	}
	out := make([]map[string]any, len(rs))
	for i, r := range rs {
		out[i] = canonRun(r)
	}
	return out
}

// sameDecoding fails t unless runDecoder (readSamples, decodeRuns,
// Run.UnmarshalJSON) and encoding/json agree on doc: the same runs and
// warnings, or both an error.
func sameDecoding(t *testing.T, what string, doc []byte, oneByte bool) {
	t.Helper()
	var r io.Reader = bytes.NewReader(doc)
	if oneByte {
		r = iotest.OneByteReader(r) // the stream window's edges everywhere
	}
	runs, warns, err := readSamplesFrom(r)
	wantRuns, wantWarns, wantErr := refReadSamples(bytes.NewReader(doc))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: readSamples error %v, encoding/json %v\n%s", what, err, wantErr, trimDoc(doc))
	}
	if err == nil && (!reflect.DeepEqual(canonRuns(runs), canonRuns(wantRuns)) || !reflect.DeepEqual(warns, wantWarns)) {
		t.Fatalf("%s: readSamples read\n%#v %q\nencoding/json\n%#v %q\n%s", what, runs, warns, wantRuns, wantWarns, trimDoc(doc))
	}
	if !json.Valid(doc) {
		return
	}
	// The documents json.Unmarshal is given whole (Run.UnmarshalJSON's
	// b, a samples file's text).
	runs, err = decodeRuns(doc)
	wantRuns, wantErr = refDecodeRuns(doc)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: decodeRuns error %v, encoding/json %v\n%s", what, err, wantErr, trimDoc(doc))
	}
	if err == nil && !reflect.DeepEqual(canonRuns(runs), canonRuns(wantRuns)) {
		t.Fatalf("%s: decodeRuns read\n%#v\nencoding/json\n%#v\n%s", what, runs, wantRuns, trimDoc(doc))
	}
	var one Run
	err = json.Unmarshal(doc, &one)
	want, wantErr := refRun(doc)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: Run.UnmarshalJSON error %v, encoding/json %v\n%s", what, err, wantErr, trimDoc(doc))
	}
	if err == nil && !reflect.DeepEqual(canonRun(one), canonRun(want)) {
		t.Fatalf("%s: Run.UnmarshalJSON read\n%#v\nencoding/json\n%#v\n%s", what, one, want, trimDoc(doc))
	}
}

func trimDoc(b []byte) string {
	if len(b) > 2000 {
		return strconv.Quote(string(b[:2000])) + "…"
	}
	return strconv.Quote(string(b))
}

// runJSONFields are runJSON's members as its tags name them, with the Go
// type each decodes into.
func runJSONFields() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			out[name] = f.Type
		}
	}
	walk(reflect.TypeFor[runJSON]())
	return out
}

// TestRunDecoderFields: runDecoder knows every member of runJSON, by the
// name its tag gives, and no other.
func TestRunDecoderFields(t *testing.T) {
	fields := runJSONFields()
	for name := range fields {
		if lookupRunField([]byte(name)) == fNone {
			t.Errorf("runDecoder does not read %q", name)
		}
	}
	if len(fields) != int(nRunFields)-1 {
		t.Errorf("runJSON has %d members, runDecoder reads %d", len(fields), nRunFields-1)
	}
}

// TestRunDecoderTopMembers: the members readSamples takes from a saved
// analysis for itself are not members of a run, so that reading the same
// document as a run ignores them.
func TestRunDecoderTopMembers(t *testing.T) {
	for _, k := range []string{"samples", "warnings"} {
		if f := lookupRunField([]byte(k)); f != fNone {
			t.Errorf("%q selects the run's %s", k, runFieldNames[f])
		}
	}
}

// docGen writes random run documents: every member of a run under its name
// or a case-folded spelling of it, unknown members, members named twice,
// values of the right kind and of every other, numbers at and past the
// edges of their types, strings with escapes, surrogates and invalid
// UTF-8.
type docGen struct {
	rng    *rand.Rand
	fields []string
	types  map[string]reflect.Type
}

func newDocGen(seed uint64) *docGen {
	g := &docGen{rng: rand.New(rand.NewPCG(seed, 7)), types: runJSONFields()}
	for k := range g.types {
		g.fields = append(g.fields, k)
	}
	// Map order is random: sort for a reproducible sequence per seed.
	sortStrings(g.fields)
	return g
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func (g *docGen) pick(xs ...string) string { return xs[g.rng.IntN(len(xs))] }

func (g *docGen) ws() string {
	if g.rng.IntN(8) == 0 {
		return g.pick(" ", "\n", "\t ", "\r\n  ")
	}
	return ""
}

var floatTexts = []string{"0", "-0", "1.5", "123.456", "1e3", "1E-3", "-2.5e+10", "1e400", "-1e400", "1e-400",
	"4.9e-324", "1.7976931348623157e308", "1.7976931348623159e308", "0.1", "3.14159265358979323846264338327950288",
	"12345678901234567890", "123456789012345", "1234567890123456", "0.000000000000000000001", "9007199254740993",
	"1" + strings.Repeat("0", 400), "0." + strings.Repeat("0", 30) + "1", "100000000000000000000000", "-0.0"}

var intTexts = []string{"0", "-0", "5", "-3", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
	"-9223372036854775809", "1.0", "1e2", "2.5", "17", "100000"}

func (g *docGen) float() string {
	switch g.rng.IntN(4) {
	case 0:
		return g.pick(floatTexts...)
	case 1:
		return strconv.Itoa(g.rng.IntN(2000) - 1000)
	}
	v := g.rng.NormFloat64() * math.Pow(10, float64(g.rng.IntN(12)-4))
	return strconv.FormatFloat(v, g.pick("g", "f", "e")[0], -1, 64)
}

func (g *docGen) str() string {
	var b strings.Builder
	b.WriteByte('"')
	for range g.rng.IntN(6) {
		b.WriteString(g.pick("a", "Z", "prefill", "é", "\\u00e9", "\\n", "\\\"", "\\\\", "\\/", "\\ud83d\\ude00", "\\ud800",
			"\\udc00x", "\\ud800\\u0041", "\xff", "\xc3", "\xed\xa0\x80", "\xef\xbf\xbd", "ſ", "\\u017f", " "))
	}
	b.WriteByte('"')
	return b.String()
}

func (g *docGen) name(f string) string {
	switch g.rng.IntN(10) {
	case 0:
		return strings.ToUpper(f)
	case 1:
		return strings.ReplaceAll(f, "s", "ſ")
	case 2:
		return strings.ReplaceAll(f, "k", "\u212a") // Kelvin sign
	case 3:
		if f != "" {
			return fmt.Sprintf(`\u%04x`, f[0]) + f[1:]
		}
	case 4:
		return strings.ReplaceAll(f, "_", "")
	}
	return f
}

// any is a random value of any kind, nested up to depth.
func (g *docGen) any(depth int) string {
	n := 6
	if depth > 0 {
		n = 8
	}
	switch g.rng.IntN(n) {
	case 0:
		return "null"
	case 1:
		return g.pick("true", "false")
	case 2:
		return g.float()
	case 3:
		return g.pick(intTexts...)
	case 4, 5:
		return g.str()
	case 6:
		var parts []string
		for range g.rng.IntN(4) {
			parts = append(parts, g.any(depth-1))
		}
		return "[" + strings.Join(parts, ","+g.ws()) + "]"
	}
	var parts []string
	for range g.rng.IntN(4) {
		parts = append(parts, g.str()+":"+g.any(depth-1))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// value is a value for a member of type t, mostly of the right kind.
func (g *docGen) value(t reflect.Type, name string) string {
	if g.rng.IntN(10) == 0 {
		return g.any(2)
	}
	if g.rng.IntN(12) == 0 {
		return "null"
	}
	if name == "schema" {
		return g.pick(`"llmprof.samples/v1"`, `"llmprof.samples/v1"`, `"llmprof.samples/v1"`, `""`, `"llmprof.samples/v2"`, g.str())
	}
	return g.valueOf(t)
}

// valueOf is a value of the right kind for t, lists with nulls and now
// and then an element of another kind.
func (g *docGen) valueOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice:
		if t == reflect.TypeFor[json.RawMessage]() {
			return g.any(2)
		}
		var parts []string
		for range g.rng.IntN(7) {
			if g.rng.IntN(6) == 0 {
				parts = append(parts, "null")
			} else if g.rng.IntN(30) == 0 {
				parts = append(parts, g.any(1))
			} else {
				parts = append(parts, g.valueOf(t.Elem()))
			}
		}
		return "[" + g.ws() + strings.Join(parts, g.ws()+",") + g.ws() + "]"
	case reflect.Map:
		var parts []string
		for range g.rng.IntN(4) {
			k := g.pick(`"prefill"`, `"decode"`, `"queue"`, `"x"`, `""`, g.str())
			parts = append(parts, k+":"+g.value(t.Elem(), ""))
		}
		return "{" + strings.Join(parts, ",") + "}"
	case reflect.Pointer:
		return g.valueOf(t.Elem())
	case reflect.String:
		return g.str()
	case reflect.Int:
		return g.pick(intTexts...)
	case reflect.Float64:
		return g.float()
	case reflect.Bool:
		return g.pick("true", "false")
	}
	panic(t)
}

// run is a random run object.
func (g *docGen) run() string {
	var parts []string
	for range g.rng.IntN(14) {
		var k, v string
		if g.rng.IntN(8) == 0 {
			k = g.pick("samples", "warnings", "Kernels", "Steps", "-", "extra", "run", "\xff", "")
			v = g.any(2)
		} else {
			f := g.fields[g.rng.IntN(len(g.fields))]
			k, v = g.name(f), g.value(g.types[f], f)
		}
		parts = append(parts, g.ws()+`"`+k+`"`+g.ws()+":"+g.ws()+v)
	}
	return "{" + strings.Join(parts, ",") + g.ws() + "}"
}

// runs is a run, an array of them, or something else where runs belong.
func (g *docGen) runs() string {
	switch g.rng.IntN(10) {
	case 0, 1:
		var parts []string
		for range g.rng.IntN(4) {
			if g.rng.IntN(8) == 0 {
				parts = append(parts, g.pick("null", "5", `"x"`, "[]"))
			} else {
				parts = append(parts, g.run())
			}
		}
		return "[" + strings.Join(parts, ",") + "]"
	case 2:
		return g.any(2)
	}
	return g.run()
}

// doc is a random saved analysis, samples file or array of runs.
func (g *docGen) doc() string {
	switch g.rng.IntN(5) {
	case 0:
		return g.runs()
	case 1, 2:
		return g.run()
	}
	var parts []string
	for range g.rng.IntN(8) + 1 {
		var k, v string
		switch g.rng.IntN(7) {
		case 0, 1:
			k, v = "schema", g.pick(`"llmprof.report/v1"`, `"llmprof.report/v1"`, `"llmprof.report/v2"`, `"llmprof.samples/v1"`, `"llmprof.diff/v1"`, `"x"`, `""`, "null", "5", "[]")
		case 2, 3:
			k, v = "samples", g.runs()
		case 4:
			k = "warnings"
			v = g.pick(`[{"path":"a","code":"c","message":"m","more":2}]`, `[]`, `null`, `[{"code":5}]`, `{}`, `[{"pos":"line 1","code":"x","message":"\u00e9"}]`)
		case 5:
			k, v = g.pick("requests", "Schema", "SAMPLES", "headline", "stages", "tokens"), g.any(2)
		default:
			f := g.fields[g.rng.IntN(len(g.fields))]
			k, v = g.name(f), g.value(g.types[f], f)
		}
		parts = append(parts, `"`+k+`":`+v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// mutate changes a few bytes of doc: most results are not JSON, and both
// readers must refuse them.
func mutate(rng *rand.Rand, doc []byte) []byte {
	out := bytes.Clone(doc)
	const alphabet = "{}[]:,\"\\0123456789-+.eEntrufalse \n\xffſ"
	for range 1 + rng.IntN(3) {
		if len(out) == 0 {
			break
		}
		i := rng.IntN(len(out))
		switch rng.IntN(5) {
		case 0:
			out = append(out[:i], out[i+1:]...)
		case 1:
			out = append(out[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, out[i:]...)...)
		case 2:
			out[i] = alphabet[rng.IntN(len(alphabet))]
		case 3:
			out = out[:i]
		case 4:
			j := i + rng.IntN(min(40, len(out)-i)+1)
			out = append(out[:j], append(bytes.Clone(out[i:j]), out[j:]...)...)
		}
	}
	return out
}

// realRunDocs are saved analyses and samples files to check against
// encoding/json whole: report's saved analysis of its test trace, a
// samples file of a run with every member set, and the files
// LLMPROF_RUNFILES lists (separated by the OS's list separator), for big
// saved analyses made outside the tests.
func realRunDocs(t *testing.T) map[string][]byte {
	docs := map[string][]byte{}
	b, err := os.ReadFile(filepath.Join("..", "report", "testdata", "analyze-llmprof.json"))
	if err != nil {
		t.Fatal(err)
	}
	docs["analyze-llmprof.json"] = b
	full := fullRun(rand.New(rand.NewPCG(1, 2)), 300)
	if b, err = json.MarshalIndent(full, "", " "); err != nil {
		t.Fatal(err)
	}
	docs["samples"] = b
	if b, err = json.Marshal(map[string]any{"schema": AnalysisSchema, "requests": map[string]int{"n": 3}, "samples": []Run{full, full}}); err != nil {
		t.Fatal(err)
	}
	docs["analysis of two runs"] = b
	if list := os.Getenv("LLMPROF_RUNFILES"); list != "" {
		for _, p := range filepath.SplitList(list) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			docs[p] = b
		}
	}
	return docs
}

// fullRun is a run with every member of a saved run set, and unknown
// values (NaN) among its series.
func fullRun(rng *rand.Rand, n int) Run {
	ser := func() Series {
		s := make(Series, n)
		for i := range s {
			s[i] = math.Round(rng.ExpFloat64()*1e6) / 1e3
			if rng.IntN(20) == 0 {
				s[i] = math.NaN()
			}
		}
		return s
	}
	counts := make([]int, n)
	itl := 0
	for i := range counts {
		counts[i] = rng.IntN(5)
		itl += counts[i]
	}
	gaps := make(Series, itl)
	for i := range gaps {
		gaps[i] = rng.Float64() * 40
	}
	return Run{RunID: "r", Models: []string{"m1", "m2"}, DurationMS: 12345.678, Requests: n, Completed: n - 1, SLO: "ttft=200ms", Good: 7,
		TTFT: ser(), TPOT: ser(), E2E: ser(), Queue: ser(), OutputTokens: ser(), InputTokens: ser(), ArrivalMS: ser(), ITL: gaps, ITLCounts: counts,
		Stages:          map[string]Series{"prefill": ser(), "decode": ser()},
		Tokens:          map[string]Series{"gpu.gemm": ser()},
		FirstToken:      map[string]Series{"gpu.gemm": ser()},
		Tenants:         map[string]Series{"other": ser()},
		TokensEstimated: true}
}

// trials is how many random documents a test of a decoder against
// encoding/json checks: long under LLMPROF_LONG (.ci/run sets it), plain
// otherwise, where TestRunDecoderEdges and its kind check each rule on
// its own.
func trials(plain, long int) int {
	if os.Getenv("LLMPROF_LONG") != "" {
		return long
	}
	return plain
}

// TestRunDecoderMatchesEncodingJSON: readSamples, decodeRuns and
// Run.UnmarshalJSON give what encoding/json gives — the same runs (every
// value, to the bit) and warnings, or an error where it errs — for saved
// analyses, for random documents and for mutations of both.
func TestRunDecoderMatchesEncodingJSON(t *testing.T) {
	for name, doc := range realRunDocs(t) {
		sameDecoding(t, name, doc, false)
		// report's test analysis has no samples (its golden file is
		// written without them); every other one is runs.
		if _, _, err := readSamplesFrom(bytes.NewReader(doc)); (err != nil) != (name == "analyze-llmprof.json") {
			t.Fatalf("%s: error %v", name, err)
		}
		rng := rand.New(rand.NewPCG(uint64(len(doc)), 3))
		for i := range trials(10, 100) {
			sameDecoding(t, fmt.Sprintf("%s mutation %d", name, i), mutate(rng, doc), false)
		}
	}
	g := newDocGen(1)
	for i := range trials(250, 20000) {
		doc := []byte(g.doc())
		sameDecoding(t, fmt.Sprintf("document %d", i), doc, i%10 == 0)
		if i%3 == 0 {
			sameDecoding(t, fmt.Sprintf("document %d mutated", i), mutate(g.rng, doc), i%30 == 0)
		}
	}
}

// TestRunDecoderDepth: nesting is bounded where encoding/json bounds it,
// neither tighter (a document it reads is read) nor looser.
func TestRunDecoderDepth(t *testing.T) {
	for _, n := range []int{9998, 9999, 10000} { // the object itself is one more
		doc := []byte(`{"requests":1,"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
		sameDecoding(t, fmt.Sprintf("%d deep", n+1), doc, false)
		_, _, err := readSamplesFrom(bytes.NewReader(doc))
		if (err == nil) != (n+1 <= maxJSONDepth) {
			t.Errorf("%d deep: error %v", n+1, err)
		}
	}
}

// TestParseFloat: parseFloat's fast path gives strconv's bits.
func TestParseFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	check := func(s string) {
		got, ok := parseFloat([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if ok != (err == nil) || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseFloat(%q) = %v, %v; strconv %v, %v", s, got, ok, want, err)
		}
	}
	for _, s := range floatTexts {
		check(s)
	}
	for range trials(50000, 1000000) {
		digits := strconv.FormatUint(rng.Uint64()>>rng.IntN(64), 10)
		p := rng.IntN(len(digits) + 1)
		s := digits[:p] + "." + digits[p:]
		if p == 0 {
			s = "0" + s
		}
		if p == len(digits) {
			s = digits
		}
		if s != "0" && s[0] == '0' && (len(s) < 2 || s[1] != '.') {
			continue // not JSON
		}
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		check(s)
	}
}

// FuzzRunDecoder: on any input, readSamples (and decodeRuns and
// Run.UnmarshalJSON on valid JSON) agree with encoding/json, and return.
func FuzzRunDecoder(f *testing.F) {
	g := newDocGen(2)
	for range 20 {
		f.Add([]byte(g.doc()))
	}
	f.Add([]byte(`{"schema":"llmprof.report/v1","samples":[{"requests":1,"ttft_ms":[1,null,2e3]}]}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		sameDecoding(t, "fuzz", doc, false)
	})
}

// TestRunDecoderEdges: encoding/json's rules that random documents seldom
// reach, each on its own.
func TestRunDecoderEdges(t *testing.T) {
	for _, doc := range []string{
		// A list named twice reuses the slice: the third models has
		// the first's "b" and "c" under its nulls.
		`{"requests":1,"models":["a","b","c"],"models":["x"],"models":[null,null,null]}`,
		`{"requests":1,"itl_counts":[1,2,3],"itl_counts":[4],"itl_counts":[null,null,null,null]}`,
		`{"requests":1,"models":["a","b"],"models":[],"models":[null,null]}`,
		// A map named twice gathers both; null in it is a nil series.
		`{"requests":1,"stages_ms":{"a":[1],"b":[2]},"stages_ms":{"b":null,"c":[]}}`,
		`{"requests":1,"stages_ms":{"a":[1]},"stages_ms":null,"stages_ms":{"c":[3]}}`,
		// null keeps a string, number or boolean as it was.
		`{"run_id":"a","run_id":null,"requests":2,"requests":null,"duration_ms":1.5,"duration_ms":null,"tokens_estimated":true,"tokens_estimated":null}`,
		// Names matched as encoding/json folds them.
		`{"ſlo":"x","RUN_ID":"y","to\u212aens_estimated":true,"Requests":3,"requests":4,"\u0074tft_ms":[1]}`,
		`{"schema":"llmprof.samples/v1","SCHEMA":"other","requests":1}`,
		`{"schema":"llmprof.samples/v1","ScheMa":null,"requests":1}`,
		// Strings: invalid UTF-8 byte by byte, lone surrogates.
		`{"requests":1,"run_id":"a\xff\xc3b\xed\xa0\x80","models":["\ud800","\udc00\ud800x","\ud83d\ude00"],"stages_ms":{"\xff":[1]}}`,
		// Numbers at the edges of their types.
		`{"requests":9223372036854775807,"duration_ms":1e-400}`,
		`{"requests":9223372036854775808}`,
		`{"requests":1.0}`,
		`{"requests":1,"duration_ms":1e309}`,
		`{"requests":1,"ttft_ms":[1e309]}`,
		`{"requests":1,"ttft_ms":[-0,0.1,1e22,1e23,123456789012345678,null]}`,
		// Wrong kinds.
		`{"requests":"1"}`,
		`{"requests":1,"ttft_ms":{}}`,
		`{"requests":1,"ttft_ms":[[1]]}`,
		`{"requests":1,"stages_ms":[]}`,
		`{"requests":1,"tokens_estimated":0}`,
		`{"requests":1,"models":"m"}`,
		// Runs and analyses.
		`[null]`, `[]`, `[5]`, `[{"requests":1},{"schema":"x"}]`,
		`{"schema":"llmprof.report/v1","samples":null}`,
		`{"schema":"llmprof.report/v1","samples":{"requests":1},"samples":{"requests":2},"warnings":[{"code":"c","message":"m"}]}`,
		`{"samples":{"requests":1},"schema":"llmprof.report/v1","schema":"llmprof.samples/v1","requests":5}`,
		`{"schema":"llmprof.report/v1","samples":[{"requests":1}],"warnings":{}}`,
		`{"requests":1} {}`, `{"requests":1}]`, "\xef\xbb\xbf{\"requests\":1}", `null`, `5`,
	} {
		sameDecoding(t, doc, []byte(doc), false)
		sameDecoding(t, doc, []byte(doc), true)
	}
	runs, _, err := readSamplesFrom(strings.NewReader(`{"requests":1,"models":["a","b","c"],"models":["x"],"models":[null,null,null]}`))
	if err != nil || !reflect.DeepEqual(runs[0].Models, []string{"x", "b", "c"}) {
		t.Errorf("models named three times: %q, %v", runs[0].Models, err)
	}
}

// refReadStamps is readStamps as it was, with a json.Decoder.
func refReadStamps(r io.Reader) []stamp {
	dec := json.NewDecoder(r)
	var out []stamp
	for len(out) < 1000 {
		var doc map[string]json.RawMessage
		if err := dec.Decode(&doc); err != nil {
			if err == io.EOF {
				return out
			}
			return nil
		}
		var st stamp
		for _, k := range timeKeys {
			if t, ok := parseTime(doc[k]); ok {
				st.time = t
				break
			}
		}
		for _, k := range commitKeys {
			var c string
			if json.Unmarshal(doc[k], &c) == nil && c != "" {
				st.commit = c
				break
			}
		}
		out = append(out, st)
	}
	return nil
}

// TestReadStampsMatchesDecoder: readStamps finds the stamps a json.Decoder
// into maps finds, and fails where it fails, for files of one or more
// documents with stamps of every kind, named twice, escaped, and mutated.
func TestReadStampsMatchesDecoder(t *testing.T) {
	g := newDocGen(3)
	stampValue := func() string {
		return g.pick(`"20240102-030405"`, `"2024-01-02T03:04:05Z"`, `"2024-01-02 03:04:05"`, `"2024-01-02"`, `1700000000.5`, `-1`, `0`,
			`"abc1234"`, `""`, `null`, `true`, `[]`, `{"a":1}`, `"x"`, `"\u0032024-01-02"`, `1e400`)
	}
	keys := slices.Concat(timeKeys, commitKeys, []string{"d\\u0061te", "Date", "COMMIT", "ttfts", "other"})
	doc := func() string {
		switch g.rng.IntN(12) {
		case 0:
			return "null"
		case 1:
			return g.any(2)
		}
		var parts []string
		for range g.rng.IntN(6) {
			k := g.pick(keys...)
			v := stampValue()
			if g.rng.IntN(4) == 0 {
				v = g.any(2)
			}
			parts = append(parts, `"`+k+`":`+g.ws()+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	check := func(what string, b []byte) {
		t.Helper()
		got, want := readStampsFrom(bytes.NewReader(b)), refReadStamps(bytes.NewReader(b))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: readStamps %v, json.Decoder %v\n%q", what, got, want, b)
		}
	}
	for i := range trials(250, 10000) {
		var docs []string
		for range 1 + g.rng.IntN(3) {
			docs = append(docs, doc())
		}
		b := []byte(strings.Join(docs, g.pick("\n", "", " ", "\n\n")))
		check(fmt.Sprintf("file %d", i), b)
		check(fmt.Sprintf("file %d mutated", i), mutate(g.rng, b))
	}
	check("1000 documents", bytes.Repeat([]byte(`{"date":"2024-01-02"}`+"\n"), 1000))
	check("999 documents", bytes.Repeat([]byte(`{"date":"2024-01-02"}`+"\n"), 999))
	check("empty", nil)
}

// benchResults reads every result of a bench result file, until the end or
// the first error (whose index is len of the results), with next.
func benchResults(next func() (vllmBench, error)) ([]vllmBench, error) {
	var out []vllmBench
	for {
		b, err := next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, b)
	}
}

func sameBenchResults(t *testing.T, what string, doc []byte) {
	t.Helper()
	s := &jsonscan.Scanner{MaxDepth: maxJSONDepth}
	s.ResetReader(bytes.NewReader(doc))
	got, err := benchResults(func() (vllmBench, error) { return nextVLLMBench(s) })
	dec := json.NewDecoder(bytes.NewReader(doc))
	want, wantErr := benchResults(func() (vllmBench, error) {
		var b vllmBench
		err := dec.Decode(&b)
		return b, err
	})
	if (err != nil) != (wantErr != nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: read %d results, error %v; json.Decoder %d, %v\n%s", what, len(got), err, len(want), wantErr, trimDoc(doc))
	}
}

// TestVLLMBenchDecoderMatchesDecoder: a bench result file is read as a
// json.Decoder reads it into vllmBench, result by result, for the bench
// results in the shared test data and random and mutated ones.
func TestVLLMBenchDecoderMatchesDecoder(t *testing.T) {
	var names []string
	types := map[string]reflect.Type{}
	bt := reflect.TypeFor[vllmBench]()
	for i := range bt.NumField() {
		name, _, _ := strings.Cut(bt.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
		types[name] = bt.Field(i).Type
	}
	if !reflect.DeepEqual(names, vllmBenchFields) {
		t.Fatalf("vllmBench's members are %q, vllmBenchFields %q", names, vllmBenchFields)
	}
	g := newDocGen(4)
	result := func() string {
		var parts []string
		for range g.rng.IntN(12) {
			var k, v string
			if g.rng.IntN(8) == 0 {
				k, v = g.pick("generated_texts", "mean_ttft_ms", "Kernels", "\xff"), g.any(2)
			} else {
				f := names[g.rng.IntN(len(names))]
				k, v = g.name(f), g.value(types[f], f)
			}
			parts = append(parts, `"`+k+`":`+g.ws()+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	for i := range trials(250, 10000) {
		var docs []string
		for range 1 + g.rng.IntN(3) {
			if g.rng.IntN(15) == 0 {
				docs = append(docs, g.any(1))
			} else {
				docs = append(docs, result())
			}
		}
		b := []byte(strings.Join(docs, g.pick("\n", "", " \n")))
		sameBenchResults(t, fmt.Sprintf("file %d", i), b)
		sameBenchResults(t, fmt.Sprintf("file %d mutated", i), mutate(g.rng, b))
	}
	for _, doc := range []string{
		`{"itls":[[1,2],[3]],"itls":[[null,null,4]]}`,
		`{"errors":["a","b"],"errors":[null,"c"],"errors":[null,null]}`,
		`{"request_rate":"inf","REQUEST_RATE":null}`,
		`{"duration":1e400}`, `{"completed":1.5}`, `null`, `{} {"date":"x"}`, `{}]`,
	} {
		sameBenchResults(t, doc, []byte(doc))
	}
	if _, ok := shareddata.Root(); ok {
		files := shareddata.Glob(t, "testdata/vllm-bench/*.json")
		// One nightly result file and the summary table are the two
		// shapes; LLMPROF_LONG reads them all.
		files = files[:trials(min(2, len(files)), len(files))]
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			sameBenchResults(t, p, b)
			for i := range trials(0, 20) {
				sameBenchResults(t, fmt.Sprintf("%s mutation %d", p, i), mutate(g.rng, b))
			}
		}
	}
}
