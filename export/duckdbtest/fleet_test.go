package duckdbtest

import (
	"database/sql"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

// root is the llmprof module, two folders up.
var root = filepath.Join("..", "..")

// queries reads the example queries of docs/fleet.md: each is a ```sql block
// after a <!-- query: NAME --> marker, so the document shows exactly what
// this test runs.
func queries(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "fleet.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- query: ([a-z_]+) -->\\s*```sql\\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatal("docs/fleet.md has no <!-- query: NAME --> sql blocks")
	}
	return out
}

// llmprof builds the command from the parent module.
func llmprof(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build llmprof with: ", err)
	}
	bin := filepath.Join(t.TempDir(), "llmprof")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/llmprof")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/llmprof: %v\n%s", err, out)
	}
	return bin
}

type demoReport struct {
	Requests struct {
		Count    int `json:"count"`
		ByTenant map[string]struct {
			Count int `json:"count"`
		} `json:"by_tenant"`
		ByModel map[string]json.RawMessage `json:"by_model"`
	} `json:"requests"`
	GPU struct {
		KernelCategories []struct {
			Name    string  `json:"name"`
			TotalMs float64 `json:"total_ms"`
		} `json:"kernel_categories"`
	} `json:"gpu"`
}

// TestFleetQueries exports testdata/demo as two runs on two hosts, then runs
// every query of docs/fleet.md in DuckDB and checks the answers against
// `analyze --format json` of the same input.
func TestFleetQueries(t *testing.T) {
	bin := llmprof(t)
	demo, err := filepath.Abs(filepath.Join(root, "testdata", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	for _, run := range []struct{ id, host string }{{"run-a", "node-1"}, {"run-b", "node-2"}} {
		cmd := exec.Command(bin, "export", "--parquet", filepath.Join(work, "fleet", run.id), "--run-id", run.id, "--host", run.host, demo)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("llmprof export: %v\n%s", err, out)
		}
	}
	js, err := exec.Command(bin, "analyze", "--format", "json", demo).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rep demoReport
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	q := queries(t)
	t.Chdir(work) // the queries use paths relative to the fleet's parent

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run := func(name string) *sql.Rows {
		t.Helper()
		text, ok := q[name]
		if !ok {
			t.Fatalf("docs/fleet.md has no query %q", name)
		}
		rows, err := db.Query(text)
		if err != nil {
			t.Fatalf("query %s: %v\n%s", name, err, text)
		}
		return rows
	}

	t.Run("ttft_by_tenant", func(t *testing.T) {
		rows := run("ttft_by_tenant")
		defer rows.Close()
		perRun := map[string]int{}
		for rows.Next() {
			var runID, tenant string
			var n int
			var p50, p99 float64
			if err := rows.Scan(&runID, &tenant, &n, &p50, &p99); err != nil {
				t.Fatal(err)
			}
			if want := rep.Requests.ByTenant[tenant].Count; n != want {
				t.Errorf("%s %s: %d requests, the JSON report has %d", runID, tenant, n, want)
			}
			if !(p50 > 0 && p99 >= p50) {
				t.Errorf("%s %s: p50 %g, p99 %g", runID, tenant, p50, p99)
			}
			perRun[runID] += n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(perRun) != 2 || perRun["run-a"] != rep.Requests.Count || perRun["run-b"] != rep.Requests.Count {
			t.Errorf("requests per run %v, want %d in each of run-a and run-b", perRun, rep.Requests.Count)
		}
	})

	t.Run("gpu_by_category", func(t *testing.T) {
		want := map[string]float64{}
		for _, c := range rep.GPU.KernelCategories {
			want[c.Name] = c.TotalMs
		}
		rows := run("gpu_by_category")
		defer rows.Close()
		hosts := map[string]bool{}
		for rows.Next() {
			var host, cat string
			var ops int
			var ms float64
			if err := rows.Scan(&host, &cat, &ops, &ms); err != nil {
				t.Fatal(err)
			}
			hosts[host] = true
			// The report's category time is kernel time (sync ops are
			// "other" in both); allow rounding.
			if w, ok := want[cat]; ok && math.Abs(ms-w) > 0.01*w+0.01 {
				t.Errorf("%s %s: %.3f ms of GPU time, the JSON report has %.3f", host, cat, ms, w)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !hosts["node-1"] || !hosts["node-2"] {
			t.Errorf("hosts %v, want node-1 and node-2", hosts)
		}
	})

	t.Run("decode_buckets", func(t *testing.T) {
		rows := run("decode_buckets")
		defer rows.Close()
		n := 0
		for rows.Next() {
			var model string
			var tokens int
			var interval, buckets int64
			var gemm float64
			if err := rows.Scan(&model, &tokens, &interval, &buckets, &gemm); err != nil {
				t.Fatal(err)
			}
			n++
			if interval != buckets {
				t.Errorf("%s: buckets sum to %d ns, the intervals to %d", model, buckets, interval)
			}
			if tokens == 0 || gemm < 0 || gemm > 1 {
				t.Errorf("%s: %d tokens, gemm share %g", model, tokens, gemm)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != len(rep.Requests.ByModel) || n == 0 {
			t.Errorf("%d models, the report has %d", n, len(rep.Requests.ByModel))
		}
	})

	t.Run("slowest_requests", func(t *testing.T) {
		rows := run("slowest_requests")
		defer rows.Close()
		last := math.Inf(1)
		n := 0
		for rows.Next() {
			var runID, id, tenant string
			var e2e float64
			var hit sql.NullBool
			var tokens int
			if err := rows.Scan(&runID, &id, &tenant, &e2e, &hit, &tokens); err != nil {
				t.Fatal(err)
			}
			n++
			if e2e > last || tokens == 0 || !hit.Valid {
				t.Errorf("row %d: %s %s e2e %g (previous %g), %d tokens, kv_hit %v", n, runID, id, e2e, last, tokens, hit)
			}
			last = e2e
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != 5 {
			t.Errorf("%d rows, want 5", n)
		}
	})

	t.Run("repartition", func(t *testing.T) {
		if _, err := db.Exec(q["repartition"]); err != nil {
			t.Fatalf("repartition: %v", err)
		}
		rows := run("hive_read")
		defer rows.Close()
		total := 0
		parts := 0
		for rows.Next() {
			var date sql.NullTime
			var host string
			var runs, n int
			if err := rows.Scan(&date, &host, &runs, &n); err != nil {
				t.Fatal(err)
			}
			if !date.Valid || runs != 1 {
				t.Errorf("partition %v/%s: %d runs (want 1), date valid %v", date.Time, host, runs, date.Valid)
			}
			parts++
			total += n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if parts != 2 || total != 2*rep.Requests.Count {
			t.Errorf("%d partitions with %d requests, want 2 with %d", parts, total, 2*rep.Requests.Count)
		}
	})
}
