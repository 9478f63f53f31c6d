package report

import "testing"

// Every diff format is found by its name and its aliases, and the list help
// and errors print names them all (it once left html out).
func TestDiffFormats(t *testing.T) {
	if got, want := DiffFormats.Names(), "text, markdown, json, junit or html"; got != want {
		t.Errorf("DiffFormats.Names() = %q, want %q", got, want)
	}
	for _, f := range DiffFormats {
		for _, name := range append([]string{f.Name}, f.Aliases...) {
			if g, ok := DiffFormats.Find(name); !ok || g.Name != f.Name || g.Write == nil {
				t.Errorf("DiffFormats.Find(%q) = %q, %v", name, g.Name, ok)
			}
		}
	}
	if _, ok := DiffFormats.Find("yaml"); ok {
		t.Error("yaml is not a diff format")
	}
}

func TestStatsFormats(t *testing.T) {
	if got, want := StatsFormats.Names(), "text, csv or json"; got != want {
		t.Errorf("StatsFormats.Names() = %q, want %q", got, want)
	}
	for _, f := range StatsFormats {
		if g, ok := StatsFormats.Find(f.Name); !ok || g.Write == nil {
			t.Errorf("StatsFormats.Find(%q) not found", f.Name)
		}
	}
	if _, ok := StatsFormats.Find("markdown"); ok {
		t.Error("markdown is not a stats format")
	}
}

// Every command's formats: names and aliases unique, each found by every
// name it answers to, each with a writer.
func TestFormatTablesConsistent(t *testing.T) {
	check := func(cmd string, names [][]string, find func(string) (string, bool)) {
		seen := map[string]bool{}
		for _, ns := range names {
			for _, n := range ns {
				if seen[n] {
					t.Errorf("%s: format name %q twice", cmd, n)
				}
				seen[n] = true
				if got, ok := find(n); !ok || got != ns[0] {
					t.Errorf("%s: Find(%q) = %q, %v; want %q", cmd, n, got, ok, ns[0])
				}
			}
		}
		if _, ok := find("yaml"); ok {
			t.Errorf("%s: yaml found", cmd)
		}
	}
	table := func(cmd string, n int, entry func(int) (names []string, hasWriter bool), find func(string) (string, bool)) {
		var all [][]string
		for i := range n {
			names, ok := entry(i)
			if !ok {
				t.Errorf("%s %s: no writer", cmd, names[0])
			}
			all = append(all, names)
		}
		check(cmd, all, find)
	}
	table("analyze", len(AnalyzeFormats), func(i int) ([]string, bool) {
		f := AnalyzeFormats[i]
		return append([]string{f.Name}, f.Aliases...), f.Write != nil
	}, func(s string) (string, bool) { f, ok := AnalyzeFormats.Find(s); return f.Name, ok })
	table("tenants", len(TenantsFormats), func(i int) ([]string, bool) {
		f := TenantsFormats[i]
		return append([]string{f.Name}, f.Aliases...), f.Write != nil
	}, func(s string) (string, bool) { f, ok := TenantsFormats.Find(s); return f.Name, ok })
	table("history", len(HistoryFormats), func(i int) ([]string, bool) {
		f := HistoryFormats[i]
		return append([]string{f.Name}, f.Aliases...), f.Write != nil
	}, func(s string) (string, bool) { f, ok := HistoryFormats.Find(s); return f.Name, ok })
	if got, want := AnalyzeFormats.Names(), "text, json, markdown or html"; got != want {
		t.Errorf("analyze formats %q, want %q", got, want)
	}
}
