package history

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/compare"
)

// writeRun writes a samples file of one small run with extra top-level
// fields (a time, a commit).
func writeRun(t *testing.T, dir, name string, extra map[string]any) string {
	t.Helper()
	doc := map[string]any{"schema": compare.SamplesSchema, "requests": 3, "completed": 3, "duration_ms": 1000, "ttft_ms": []float64{10, 11, 12}}
	for k, v := range extra {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOrderAndSince: runs are put in the order of the time they carry
// (vLLM's date, RFC 3339, Unix seconds), commits are read, a directory's
// entry that is not a run is skipped with a warning, a run without a time
// makes auto fall back to names (with a warning) and --order time fail,
// and Since keeps the runs on or after a time.
func TestOrderAndSince(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, "a.json", map[string]any{"date": "20251103-020000", "commit": "ccc"})
	writeRun(t, dir, "b.json", map[string]any{"timestamp": "2025-11-01T02:00:00Z", "git_sha": "aaa"})
	writeRun(t, dir, "c.json", map[string]any{"timestamp": time.Date(2025, 11, 2, 2, 0, 0, 0, time.UTC).Unix()})
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(context.Background(), []string{dir}, compare.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Runs) != 3 || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "notes.txt: skipped") {
		t.Fatalf("%d runs, warnings %q", len(s.Runs), s.Warnings)
	}
	if order, err := s.Order(OrderAuto); err != nil || order != OrderTime {
		t.Fatalf("order %q, %v", order, err)
	}
	var names, commits []string
	for _, r := range s.Runs {
		names = append(names, filepath.Base(r.Path))
		commits = append(commits, r.Commit)
	}
	if strings.Join(names, ",") != "b.json,c.json,a.json" || strings.Join(commits, ",") != "aaa,,ccc" {
		t.Errorf("order %v, commits %v", names, commits)
	}
	s.Since(time.Date(2025, 11, 2, 0, 0, 0, 0, time.UTC))
	if len(s.Runs) != 2 || filepath.Base(s.Runs[0].Path) != "c.json" {
		t.Errorf("since: %d runs", len(s.Runs))
	}

	writeRun(t, dir, "d.json", nil)
	s, err = Load(context.Background(), []string{dir}, compare.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if order, err := s.Order(OrderAuto); err != nil || order != OrderName || filepath.Base(s.Runs[3].Path) != "d.json" {
		t.Errorf("auto without a time: order %q, %v", order, err)
	}
	if _, err := s.Order(OrderTime); err == nil || !strings.Contains(err.Error(), "d.json") {
		t.Errorf("--order time with a run without one: %v", err)
	}
	if _, err := Load(context.Background(), []string{filepath.Join(dir, "notes.txt")}, compare.LoadOptions{}); err == nil {
		t.Error("a named file that is not a run loads")
	}
}
