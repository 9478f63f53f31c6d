package align

import (
	"context"
	"encoding/csv"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/nsys"
)

// The real exports in ../shared/testdata/nsys/ are read here with the sqlite3
// shell, only the columns the causality check needs, because the nsys decoder
// is not on main yet; once it is, this test should decode them with it. The
// SQL also computes the expected figures independently (the nsys recipes'
// join: correlationId and globalPid = globalTid & 0xFFFFFFFFFF000000).

func sqliteRows(t *testing.T, path, query string) [][]string {
	t.Helper()
	out, err := exec.Command("sqlite3", "-readonly", "-csv", path, query).Output()
	if err != nil {
		t.Fatalf("sqlite3 %s: %v", filepath.Base(path), err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	if err != nil {
		t.Fatalf("sqlite3 output: %v", err)
	}
	return rows
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	if s == "" {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("not an integer: %q", s)
	}
	return v
}

// TestCausalityRealNsys reports, for every real export, how many GPU ops
// start before their launching API call and by how much at most, after
// aligning the export alone (its own clock is the reference), and checks the
// figures against the same question asked in SQL.
func TestCausalityRealNsys(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 shell not found; it computes the expected figures")
	}
	for _, path := range shareddata.Glob(t, "testdata/nsys/*.sqlite") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tables := map[string]bool{}
			for _, r := range sqliteRows(t, path, "SELECT name FROM sqlite_master WHERE type='table'") {
				tables[r[0]] = true
			}
			if !tables["CUPTI_ACTIVITY_KIND_RUNTIME"] || !tables["TARGET_INFO_SESSION_START_TIME"] {
				t.Skip("no runtime table or session start")
			}
			// The decoder reads the export; the SQL below computes the
			// expected join independently.
			tr, err := nsys.Decoder{}.DecodeFile(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			var unions []string
			// Every GPU op the decoder keeps: kernels, copies, memsets and
			// synchronizations.
			for _, tab := range []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"} {
				if tables[tab] {
					unions = append(unions, "SELECT start, end, correlationId, globalPid FROM "+tab)
				}
			}
			res := mustAlign(t, tr, DefaultOptions())
			c := res.Causality
			if f := res.Fits[0]; f.Status != StatusReference {
				t.Errorf("a lone export is its own reference, got %s", f.Status)
			}
			want := sqliteRows(t, path, `SELECT count(*), coalesce(sum(g.start < r.start), 0), coalesce(max(r.start - g.start), 0)
				FROM (`+strings.Join(unions, " UNION ALL ")+`) g
				JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON g.correlationId = r.correlationId AND g.globalPid = (r.globalTid & 0xFFFFFFFFFF000000)`)[0]
			wantLargest := max(atoi(t, want[2]), 0)
			if int64(c.Checked) != atoi(t, want[0]) || int64(c.Violations) != atoi(t, want[1]) || c.LargestNs != wantLargest {
				t.Errorf("causality %+v; SQL says checked %s, violations %s, largest %d", c, want[0], want[1], wantLargest)
			}
			t.Logf("%d GPU ops joined to their launch call; %d start before it (largest lead %d ns)", c.Checked, c.Violations, c.LargestNs)
		})
	}
}
