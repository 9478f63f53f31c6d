package report_test

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/report"
	"github.com/llmprof/llmprof/synth"
)

// encoderJSON is the report as encoding/json's Encoder writes it, which is
// what WriteJSON wrote before it was written by hand (report/jsonwrite.go).
func encoderJSON(r *report.Report) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err := enc.Encode(r)
	return b.Bytes(), err
}

// checkSameJSON fails unless WriteJSON writes exactly what the Encoder
// writes (or both fail).
func checkSameJSON(t *testing.T, r *report.Report) {
	t.Helper()
	want, wantErr := encoderJSON(r)
	var got bytes.Buffer
	gotErr := r.WriteJSON(&got)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("WriteJSON error %v, encoding/json error %v", gotErr, wantErr)
	}
	if wantErr == nil && !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("WriteJSON differs from encoding/json:\n%s", firstDifference(got.Bytes(), want))
	}
}

// firstDifference shows where a and b part, with some context.
func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return fmt.Sprintf("at byte %d\n--- WriteJSON:\n%s\n--- encoding/json:\n%s", i, a[lo:min(len(a), i+200)], b[lo:min(len(b), i+200)])
}

// TestWriteJSONMatchesEncoder: on the golden reports and on one with the
// infrastructure section, the hand-written JSON is encoding/json's.
func TestWriteJSONMatchesEncoder(t *testing.T) {
	for _, style := range []synth.Style{synth.StyleLLM, synth.StyleVLLM} {
		t.Run(fmt.Sprint(style), func(t *testing.T) { checkSameJSON(t, demoReport(t, style)) })
	}
}

// writeSizes records the size of each Write.
type writeSizes struct {
	bytes.Buffer
	sizes []int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.Buffer.Write(p)
}

// TestWriteJSONInChunks: a report of megabytes (its samples) reaches the
// writer in chunks of about 64 KiB, not whole, and reads as encoding/json
// writes it.
func TestWriteJSONInChunks(t *testing.T) {
	r := demoReport(t, synth.StyleLLM)
	series := make(compare.Series, 200_000)
	for i := range series {
		series[i] = float64(i%9973) / 7
	}
	series[17] = math.NaN()
	r.Samples = &compare.Run{TTFT: series}
	want, err := encoderJSON(r)
	if err != nil {
		t.Fatal(err)
	}
	var got writeSizes
	if err := r.WriteJSON(&got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("WriteJSON differs from encoding/json:\n%s", firstDifference(got.Bytes(), want))
	}
	if len(got.sizes) < len(want)/(128<<10) {
		t.Errorf("%d bytes in %d writes, want chunks of at most 128 KiB", len(want), len(got.sizes))
	}
	for _, n := range got.sizes {
		if n > 128<<10 {
			t.Fatalf("a write of %d bytes (of %d), want chunks of at most 128 KiB", n, len(want))
		}
	}
}

// FuzzWriteJSON: on randomized reports (every exported field of every type
// under Report, filled or left zero at random, with strings that need
// escaping, NaN where a type writes it as null, floats in exponent range),
// the hand-written JSON is encoding/json's.
func FuzzWriteJSON(f *testing.F) {
	for seed := range uint64(200) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := &report.Report{}
		(&filler{rng: rand.New(rand.NewPCG(seed, 1))}).fill(reflect.ValueOf(r).Elem(), false, 0)
		checkSameJSON(t, r)
	})
}

// TestWriteJSONCoversEveryField fills every field of every type under
// Report (every pointer set, every slice and map non-empty) and compares
// the two writers; when they differ it finds the fields responsible by
// leaving each one zero in turn, so that a field added to a report type
// without jsonWriter writing it fails here by name.
func TestWriteJSONCoversEveryField(t *testing.T) {
	build := func(skip *fieldID) *report.Report {
		r := &report.Report{}
		(&filler{rng: rand.New(rand.NewPCG(7, 7)), full: true, skip: skip}).fill(reflect.ValueOf(r).Elem(), false, 0)
		return r
	}
	same := func(r *report.Report) bool {
		want, err := encoderJSON(r)
		if err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		var got bytes.Buffer
		if err := r.WriteJSON(&got); err != nil {
			t.Fatalf("WriteJSON: %v", err)
		}
		return bytes.Equal(got.Bytes(), want)
	}
	full := build(nil)
	if same(full) {
		// Every field was set: the writers agree on all of them.
		fields := 0
		for range reportFields() {
			fields++
		}
		if fields < 100 {
			t.Fatalf("only %d fields under Report: the walk is broken", fields)
		}
		return
	}
	var culprits []string
	for id := range reportFields() {
		if same(build(&id)) {
			culprits = append(culprits, id.String())
		}
	}
	t.Fatalf("WriteJSON differs from encoding/json on a fully filled report; fields that jsonWriter does not write as encoding/json does: %v", culprits)
}

// fieldID names one field of one struct type.
type fieldID struct {
	t     reflect.Type
	index int
}

func (id fieldID) String() string { return id.t.String() + "." + id.t.Field(id.index).Name }

// reportFields yields every exported field of every struct type reachable
// from Report.
func reportFields() func(yield func(fieldID) bool) {
	return func(yield func(fieldID) bool) {
		seen := map[reflect.Type]bool{}
		var walk func(t reflect.Type) bool
		walk = func(t reflect.Type) bool {
			for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
				t = t.Elem()
			}
			if t.Kind() != reflect.Struct || seen[t] {
				return true
			}
			seen[t] = true
			for i := range t.NumField() {
				if !t.Field(i).IsExported() {
					continue
				}
				if !yield(fieldID{t, i}) || !walk(t.Field(i).Type) {
					return false
				}
			}
			return true
		}
		walk(reflect.TypeFor[report.Report]())
	}
}

// filler sets values at random: with full, every field, pointer, slice and
// map is set (one to three elements); otherwise each is left zero or nil
// now and then. skip is left zero wherever its type appears.
type filler struct {
	rng  *rand.Rand
	full bool
	skip *fieldID
}

// nullFloats are the types that write NaN and infinities as null; a NaN
// anywhere else is an error for both writers.
var nullFloats = map[reflect.Type]bool{
	reflect.TypeFor[compare.Series]():           true,
	reflect.TypeFor[attribution.Distribution](): true,
	reflect.TypeFor[attribution.Float]():        true,
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// fillStrings need escaping in every way encoding/json distinguishes.
var fillStrings = []string{"", "a", "tenant-a", "Qwen/Qwen2.5-7B", "<b>&amp;</b>", "quote\" back\\slash", "tab\tnew\nline\r",
	"\x00\x1f\b\f", "é ü 日本", "\u2028\u2029", "bad \xff utf-8", "stage.prefill", "zz last"}

// fillFloats include the edges of encoding/json's float format.
var fillFloats = []float64{0, 1, -1.5, 123.456, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.5e300, 5e-324, 0.1, 100.25, 1234567.0001, 1e6, 1e-5}

func (f *filler) set() bool { return f.full || f.rng.IntN(5) > 0 }

func (f *filler) fill(v reflect.Value, nullOK bool, depth int) {
	if depth > 12 {
		return
	}
	t := v.Type()
	nullOK = nullOK || nullFloats[t]
	if t.Implements(textMarshaler) && t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 {
		// Enumerations: only the values they name.
		for n := f.rng.IntN(4); n >= 0; n-- {
			if t.Kind() >= reflect.Uint {
				v.SetUint(uint64(n))
			} else {
				v.SetInt(int64(n))
			}
			if _, err := v.Interface().(encoding.TextMarshaler).MarshalText(); err == nil {
				return
			}
		}
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		v.SetBool(f.full || f.rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := int64(f.rng.IntN(1000)) - 100
		if f.rng.IntN(8) == 0 {
			n = math.MaxInt64 >> (64 - t.Bits()) // the largest
		}
		if f.full && n == 0 {
			n = 1
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.rng.IntN(1000)) + 1)
	case reflect.Float32, reflect.Float64:
		x := fillFloats[f.rng.IntN(len(fillFloats))] * float64(1-2*f.rng.IntN(2))
		if f.rng.IntN(3) == 0 {
			x = f.rng.NormFloat64() * math.Pow(10, float64(f.rng.IntN(12)-4))
		}
		if nullOK && f.rng.IntN(4) == 0 {
			x = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[f.rng.IntN(3)]
		}
		if f.full && x == 0 {
			x = 0.5
		}
		v.SetFloat(x)
	case reflect.String:
		s := fillStrings[f.rng.IntN(len(fillStrings))]
		if f.full && s == "" {
			s = "x"
		}
		v.SetString(s)
	case reflect.Pointer:
		if !f.set() {
			return
		}
		p := reflect.New(t.Elem())
		f.fill(p.Elem(), nullOK, depth+1)
		v.Set(p)
	case reflect.Slice:
		if !f.set() {
			return
		}
		n := f.rng.IntN(3)
		if f.full {
			n++
		}
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			f.fill(s.Index(i), nullOK, depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.fill(v.Index(i), nullOK, depth+1)
		}
	case reflect.Map:
		if !f.set() {
			return
		}
		m := reflect.MakeMap(t)
		n := f.rng.IntN(4)
		if f.full {
			n++
		}
		for range n {
			k := reflect.New(t.Key()).Elem()
			f.fill(k, false, depth+1)
			e := reflect.New(t.Elem()).Elem()
			f.fill(e, nullOK, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range t.NumField() {
			if !t.Field(i).IsExported() || f.skip != nil && f.skip.t == t && f.skip.index == i {
				continue
			}
			if f.full || f.rng.IntN(4) > 0 {
				f.fill(v.Field(i), nullOK, depth+1)
			}
		}
	}
}
