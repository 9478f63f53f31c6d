package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// A long name with invalid UTF-8 gets the same tag where it is cut and in
// the list rebuilt from the report's JSON (encoding/json replaces each bad
// byte by U+FFFD; the cut had made one U+FFFD of a run of them, so the
// body's tag was not in the list).
func TestLongNameTagSurvivesInvalidUTF8(t *testing.T) {
	name := strings.Repeat("k", 100) + "\xff\xfe\xfd" + strings.Repeat("z", 100)
	seen := map[string]string{}
	cut := cutLongNames("kernel "+name+" ran", seen)
	if len(seen) != 1 {
		t.Fatalf("cut %q collected %d names", cut, len(seen))
	}
	data, err := json.Marshal(name)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON string
	if err := json.Unmarshal(data, &fromJSON); err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	longRuns(fromJSON, func(start, end int) { listed[nameTag(fromJSON[start:end])] = fromJSON[start:end] })
	for tag := range seen {
		if _, ok := listed[tag]; !ok || !strings.Contains(cut, tag) {
			t.Errorf("the body's tag %s is not among the JSON's %v", tag, listed)
		}
	}
}

// One long name printed in brackets, with a possessive or before a clause's
// punctuation is one name, listed once; a kernel's own closing bracket is
// part of its name.
func TestLongNameInItsSentence(t *testing.T) {
	name := strings.Repeat("tenant-", 40)
	for _, s := range []string{
		name,
		"served (" + name + ") on GPU 0",
		"(" + name + "),",
		name + "'s requests",
		name + "’s requests",
		`"` + name + `'s";`,
	} {
		var got []string
		longRuns(s, func(start, end int) { got = append(got, s[start:end]) })
		if len(got) != 1 || got[0] != name {
			t.Errorf("in %q: long runs %q, want the name alone", s, got)
		}
	}
	kernel := "attention_kernel<" + strings.Repeat("float,", 30) + "128>(float*,float*)"
	for _, s := range []string{kernel, "kernel " + kernel + ",", "(" + kernel + ")", "((" + kernel + "))'s"} {
		var got []string
		longRuns(s, func(start, end int) { got = append(got, s[start:end]) })
		if len(got) != 1 || got[0] != kernel {
			t.Errorf("in %q: long runs %q, want the kernel's whole name", s, got)
		}
	}
}
