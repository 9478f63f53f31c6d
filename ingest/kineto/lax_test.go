package kineto

import (
	"context"
	"strings"
	"testing"
)

// The reader keeps the rules it had before internal/jsonscan: a string it
// skips may hold a backslash before any character, and NUL bytes (zero fill)
// may follow the top-level object. Neither truncates the read.
func TestLaxSkipKeepsEvents(t *testing.T) {
	ev := `{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1700000000000000, "dur": 1}`
	for _, tc := range []struct {
		name, in string
		spans    int
	}{
		{"zero fill", `{"traceEvents": [` + ev + `]}` + strings.Repeat("\x00", 16) + "\n", 1},
		{"zero fill, no events", `{"traceEvents": []}` + strings.Repeat("\x00", 16), 0},
		{"escape in a skipped field", `{"traceEvents": [` + ev + `], "x": "C:\Users\q"}`, 1},
		{"escape in skipped args", `{"traceEvents": [` + strings.Replace(ev, `"dur": 1`, `"dur": 1, "args": {"stack": "a\q", "n": [1, "\z"]}`, 1) + `, ` + ev + `]}`, 2},
	} {
		tr, err := Decoder{}.DecodeReader(context.Background(), strings.NewReader(tc.in), "lax.json")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(tr.Spans) != tc.spans {
			t.Errorf("%s: %d spans, want %d", tc.name, len(tr.Spans), tc.spans)
		}
		for _, w := range tr.Warnings.List {
			if !strings.Contains(w.String(), "no GPU activity") { // a CPU-only capture, as these are
				t.Errorf("%s: warning %v", tc.name, w)
			}
		}
	}
	// Text after the object that is not zero fill is still an error.
	tr, err := Decoder{}.DecodeReader(context.Background(), strings.NewReader(`{"traceEvents": [`+ev+`]}`+"\x00x"), "lax.json")
	if err == nil && len(tr.Warnings.List) == 0 {
		t.Error("data after the zero fill was accepted without a word")
	}
}
