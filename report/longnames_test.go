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
