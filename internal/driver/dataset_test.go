package driver

import (
	"bytes"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDatasetRoundTrip: the demo run added to a dataset and analysed again
// from it (analyze --parquet) gives the same report, every section, but
// for the inputs' paths; a run_id already there is refused.
func TestDatasetRoundTrip(t *testing.T) {
	opts := Options{}
	a := run(t, opts, demoDir)
	dir := filepath.Join(t.TempDir(), "fleet")
	var msg bytes.Buffer
	te := TableExport{Dataset: dir, RunID: "demo/1", Host: "gpu-node-1", Date: "2026-12-02"}
	if err := te.Check([]string{demoDir}); err != nil {
		t.Fatal(err)
	}
	if err := te.Write(&msg, []string{demoDir}, a); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "*", "date=2026-12-02", "host=gpu-node-1", "run_id=demo%2F1"); !strings.Contains(msg.String(), want) {
		t.Errorf("export says %q, want the partition %s", msg.String(), want)
	}
	if err := te.Write(&msg, []string{demoDir}, a); err == nil || !strings.Contains(err.Error(), "already in the dataset") {
		t.Errorf("the run again: %v", err)
	}
	opts.Dataset = dir
	b := run(t, opts, "demo/1")
	var want, got bytes.Buffer
	if err := a.Report("test").WriteJSON(&want); err != nil {
		t.Fatal(err)
	}
	if err := b.Report("test").WriteJSON(&got); err != nil {
		t.Fatal(err)
	}
	restored := regexp.MustCompile(`[^"\s]*llmprof-run-[0-9]+/0/demo`)
	if g := restored.ReplaceAllString(got.String(), demoDir); g != want.String() {
		i := 0
		for i < len(g) && i < want.Len() && g[i] == want.String()[i] {
			i++
		}
		t.Errorf("the report from the dataset differs at byte %d: %.200q, want %.200q", i, g[i:], want.String()[i:])
	}
}

func TestTableExportOptions(t *testing.T) {
	var oe *OptionError
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"bad date", TableExport{Dataset: "d", Date: "2026-13-01"}.Check(nil)},
		{"stdin kept", TableExport{Dataset: "d"}.Check([]string{"-"})},
		{"each with run id", TableExport{Dataset: "d", RunID: "x"}.EachRun([]string{"a"}, "", nil)},
		{"each with perfetto", TableExport{Dataset: "d"}.EachRun([]string{"a"}, "p.json", nil)},
		{"each without dataset", TableExport{Parquet: "p"}.EachRun([]string{"a"}, "", nil)},
	} {
		if !errors.As(tc.err, &oe) {
			t.Errorf("%s: %v, want an option error", tc.name, tc.err)
		}
	}
	if err := (TableExport{Dataset: "d", NoInputs: true}).Check([]string{"-"}); err != nil {
		t.Errorf("stdin without its inputs kept: %v", err)
	}
	var got []string
	if err := (TableExport{Dataset: "d"}).EachRun([]string{"a", "b"}, "", func(in []string) error { got = append(got, in...); return nil }); err != nil || strings.Join(got, ",") != "a,b" {
		t.Errorf("each run: %v, %v", got, err)
	}
}
