package ingest

import "testing"

// TestParseMirror is the table of texts the one mirror parser accepts and
// refuses; the aligner and the step join both read ranges through it.
func TestParseMirror(t *testing.T) {
	id := SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	other := SpanID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	cases := []struct {
		text string
		want Mirror
	}{
		{"span_id=00f067aa0ba902b7", Mirror{Kind: MirrorSpanID, Span: id}},
		{"prefill span_id=00F067AA0BA902B7 tenant=a", Mirror{Kind: MirrorSpanID, Span: id}},
		{"decode(span_id=00f067aa0ba902b7)", Mirror{Kind: MirrorSpanID, Span: id}},
		{"step 12 span_id=0123456789abcdef", Mirror{Kind: MirrorSpanID, Span: other}}, // what synth writes
		{"span_id=00f067aa0ba902b", Mirror{}},                                         // 15 digits
		{"span_id=00f067aa0ba902b7ff", Mirror{}},                                      // 18 digits
		{"span_id=0000000000000000", Mirror{}},                                        // the absent ID
		{"myspan_id=00f067aa0ba902b7", Mirror{}},                                      // not at a word start
		{"parent_span_id=00f067aa0ba902b7", Mirror{}},                                 // another key
		{"request_id=cmpl-42,step=7", Mirror{Kind: MirrorRequest, ID: "cmpl-42"}},     // request ID beats step
		{"span_id=zz request_id=r1", Mirror{Kind: MirrorRequest, ID: "r1"}},           // bad span ID falls through
		{"step=007", Mirror{Kind: MirrorStep, ID: "7"}},                               // leading zeros
		{"step=000", Mirror{Kind: MirrorStep, ID: "0"}},                               // zero
		{"step 42", Mirror{Kind: MirrorStep, ID: "42"}},                               // a range named after the step
		{"step 42: decode", Mirror{Kind: MirrorStep, ID: "42"}},                       //
		{"step=7b", Mirror{}},              // not a number
		{"step=", Mirror{}},                // empty value
		{"microstep=3", Mirror{}},          // not at a word start
		{"a step 3", Mirror{}},             // "step <n>" only at the start
		{"step 3x", Mirror{}},              // not a number
		{"forward", Mirror{}},              // no key
		{"", Mirror{}},                     // empty
		{"request_id=", Mirror{}},          // empty value
		{"x request_id=\"abc\"", Mirror{}}, // value starts with a delimiter
		{"x; request_id=abc|more", Mirror{Kind: MirrorRequest, ID: "abc"}},           // delimiters
		{"step=1 span_id=0123456789abcdef", Mirror{Kind: MirrorSpanID, Span: other}}, // span ID wins
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			if got := ParseMirror(tc.text); got != tc.want {
				t.Errorf("ParseMirror(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
		})
	}
	if n, ok := ParseMirror("step=007").Step(); !ok || n != 7 {
		t.Errorf("Step() of step=007 = %d, %v", n, ok)
	}
	if _, ok := ParseMirror("request_id=7").Step(); ok {
		t.Error("Step() of a request key is ok")
	}
}
