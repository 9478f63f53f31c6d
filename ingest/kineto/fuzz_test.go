package kineto

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzKineto feeds arbitrary bytes to the decoder: it must never panic or
// hang, an error must name the problem, and what it keeps must be a valid
// model (no op ending before it starts, every string id in the table).
func FuzzKineto(f *testing.F) {
	edge, err := os.ReadFile(filepath.Join("testdata", "edge.pt.trace.json"))
	if err != nil {
		f.Fatal(err)
	}
	// One small trace per event of the edge-case fixture: the fuzzer
	// minimizes every input that finds new coverage, which for a 6 KB seed
	// takes its whole minutes-long budget.
	for _, line := range bytes.Split(edge, []byte("\n")) {
		line = bytes.TrimSuffix(bytes.TrimSpace(line), []byte(","))
		if bytes.HasPrefix(line, []byte("{\"")) && bytes.HasSuffix(line, []byte("}")) {
			f.Add([]byte(`{"schemaVersion": 1, "traceEvents": [` + string(line) + `], "baseTimeNanoseconds": 1735632360000000000}`))
		}
	}
	f.Add([]byte(`{"schemaVersion":1,"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5e3,"dur":"2","args":{"stream":"0x7","correlation":-1}}]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"X","cat":"cuda_runtime","name":"\ud800\u00e9","ts":99999999999999999999,"dur":1}],"baseTimeNanoseconds":9223372036854775807}`))
	f.Add([]byte(`{"schemaVersion":1,"traceEvents":[[[[[]]]],{"args":{"grid":[1,2,3,4,5]}}],"deviceProperties":[{"id":99999}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Decoder{}.DecodeReader(context.Background(), bytes.NewReader(data), "fuzz.json")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		tr.Validate()
		for i := range tr.GPUOps {
			o := &tr.GPUOps[i]
			if o.End < o.Start || int(o.Name) >= tr.Strings.Len() {
				t.Fatalf("bad op %+v", *o)
			}
		}
		for i := range tr.Spans {
			s := &tr.Spans[i]
			if s.End < s.Start || int(s.Name) >= tr.Strings.Len() {
				t.Fatalf("bad span %+v", *s)
			}
		}
		_ = tr.LaunchCalls()
	})
}

// TestBadInput: what cannot be read is an error naming the file and the
// byte; what is damaged after some events keeps them, with a warning.
func TestBadInput(t *testing.T) {
	edge, err := os.ReadFile(filepath.Join("testdata", "edge.pt.trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.Index(edge, []byte(`"cat": "Kernel"`))
	for _, tc := range []struct {
		name, in string
		errLike  string // "" = decodes
		warn     string // a warning code expected
		spans    int    // spans and API calls
	}{
		{"not json", "hello", "expected an object at byte 0", "", 0},
		{"empty object", "{}", "", "no-events", 0},
		{"traceEvents not an array", `{"traceEvents": 5}`, "traceEvents is not an array", "", 0},
		{"truncated mid-event", string(edge[:cut]), "", "truncated", 6},
		{"trailing garbage, no events", `{"traceEvents": []} x`, "unexpected data after the top-level value", "", 0},
		{"trailing garbage after events", `{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1700000000000000, "dur": 1}]} x`, "", "truncated", 1},
		{"bad number", `{"traceEvents": [{"ph": "X", "ts": 01}]}`, "invalid number", "", 0},
		{"relative, no base", `{"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 5.5, "dur": 1}]}`, "", "no-base-time", 1},
		{"deep nesting", `{"traceEvents": [` + strings.Repeat("[", 1000) + `]}`, "", "truncated", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Decoder{}.DecodeReader(context.Background(), strings.NewReader(tc.in), "bad.json")
			if tc.errLike != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errLike) || !strings.Contains(err.Error(), "bad.json") {
					t.Fatalf("err %v, want one naming bad.json and %q", err, tc.errLike)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, w := range tr.Warnings.List {
				found = found || w.Code == tc.warn
			}
			if !found {
				t.Errorf("warnings %v, want %s", tr.Warnings.List, tc.warn)
			}
			if n := tr.CPURecordCount(); n != tc.spans {
				t.Errorf("%d spans and API calls kept, want %d", n, tc.spans)
			}
		})
	}
}

// TestMicrosToNanos: exact decimal conversion where float64 is not.
func TestMicrosToNanos(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1712195495505582.988", 1712195495505582988, true},
		{"1695835542514261", 1695835542514261000, true},
		{"0.5", 500, true},
		{"0.0005", 1, true},
		{"0.0004", 0, true},
		{"-2.000", -2000, true},
		{"1.7e+15", 1700000000000000000, true},
		{"1.25E-3", 1, true},
		{"12.5e-1", 1250, true},
		{"9223372036854775.807", 9223372036854775807, true},
		{"9223372036854775.808", 0, false},
		{"1e400", 0, false},
		{"abc", 0, false},
		{"", 0, false},
	} {
		got, ok := microsToNanos([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("microsToNanos(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
