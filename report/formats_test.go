package report

import "testing"

// Every diff format is found by its name and its aliases, and the list help
// and errors print names them all (it once left html out).
func TestDiffFormats(t *testing.T) {
	if got, want := DiffFormatNames(), "text, markdown, json, junit or html"; got != want {
		t.Errorf("DiffFormatNames() = %q, want %q", got, want)
	}
	for _, f := range DiffFormats {
		for _, name := range append([]string{f.Name}, f.Aliases...) {
			if g, ok := FindDiffFormat(name); !ok || g.Name != f.Name || g.Write == nil {
				t.Errorf("FindDiffFormat(%q) = %q, %v", name, g.Name, ok)
			}
		}
	}
	if _, ok := FindDiffFormat("yaml"); ok {
		t.Error("yaml is not a diff format")
	}
}

func TestStatsFormats(t *testing.T) {
	if got, want := StatsFormatNames(), "text, csv or json"; got != want {
		t.Errorf("StatsFormatNames() = %q, want %q", got, want)
	}
	for _, f := range StatsFormats {
		if g, ok := FindStatsFormat(f.Name); !ok || g.Write == nil {
			t.Errorf("FindStatsFormat(%q) not found", f.Name)
		}
	}
	if _, ok := FindStatsFormat("markdown"); ok {
		t.Error("markdown is not a stats format")
	}
}
