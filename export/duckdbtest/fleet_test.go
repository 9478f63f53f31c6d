package duckdbtest

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

// root is the llmprof module, two folders up.
var root = filepath.Join("..", "..")

// fleetDoc reads the SQL blocks of docs/fleet.md that follow a
// <!-- query: NAME --> or <!-- setup: NAME --> marker, so the document
// shows exactly what this test runs.
func fleetDoc(t *testing.T, kind string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "fleet.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- " + kind + ": ([a-z_]+) -->\\s*```sql\\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatalf("docs/fleet.md has no <!-- %s: NAME --> sql blocks", kind)
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

func run(t *testing.T, bin string, args ...string) (stdout, stderr []byte) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("llmprof %s: %v\n%s", strings.Join(args, " "), err, e.Bytes())
	}
	return o.Bytes(), e.Bytes()
}

// analysis is the part of `analyze --format json` the queries answer.
type analysis struct {
	Requests struct {
		Count   int `json:"count"`
		Metrics struct {
			E2E dist `json:"e2e"`
		} `json:"metrics"`
		ByTenant map[string]struct {
			Count   int `json:"count"`
			Metrics struct {
				TTFT dist `json:"ttft"`
			} `json:"metrics"`
			OutputTokens int `json:"output_tokens"`
		} `json:"by_tenant"`
	} `json:"requests"`
	KV struct {
		ByTenant []struct {
			Name     string `json:"name"`
			Requests int    `json:"requests"`
			Hits     int    `json:"hits"`
		} `json:"by_tenant"`
	} `json:"kv_cache"`
	Tokens struct {
		ByModel []struct {
			Name         string  `json:"name"`
			Tokens       int     `json:"tokens"`
			MeanInterval float64 `json:"mean_interval_ms"`
			Buckets      []struct {
				Name    string  `json:"name"`
				TotalMs float64 `json:"total_ms"`
			} `json:"buckets"`
		} `json:"by_model"`
	} `json:"tokens"`
	GPU struct {
		KernelCategories []struct {
			Name    string  `json:"name"`
			TotalMs float64 `json:"total_ms"`
		} `json:"kernel_categories"`
	} `json:"gpu"`
}

type dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// fleetRun is one run of the dataset: how it was simulated and exported,
// where it went, and what analyze said of it.
type fleetRun struct {
	id, host, date string
	demo, export   []string
	rep            analysis
	in             string // the run's input folder
	json           []byte // its analyze --format json
}

// fleetRuns are 20 simulated runs: 20 seeds, 2–4 s of requests, four hosts
// (one left to the default), three days (a third left to the default), one
// without GPU data, one in vLLM's span conventions, one with CUDA graphs,
// one run_id that Hive must escape.
func fleetRuns() []*fleetRun {
	var runs []*fleetRun
	for k := range 20 {
		r := &fleetRun{id: fmt.Sprintf("run-%02d", k)}
		if k == 5 {
			r.id = "nightly/05:a=b%"
		}
		nsys := "1s"
		if k == 7 {
			nsys = "0"
		}
		r.demo = []string{"demo", "--seed", fmt.Sprint(k + 1), "--duration", fmt.Sprintf("%ds", 2+k%3), "--nsys", nsys}
		switch k {
		case 11:
			r.demo = append(r.demo, "--style", "vllm")
		case 13:
			r.demo = append(r.demo, "--noise-seed", "99")
		case 17:
			r.demo = append(r.demo, "--cuda-graphs")
		}
		r.export = []string{"--run-id", r.id}
		if k != 3 {
			r.export = append(r.export, "--host", fmt.Sprintf("gpu-node-%d", k%4))
		}
		if k%3 != 0 {
			r.export = append(r.export, "--date", fmt.Sprintf("2026-12-%02d", k%3))
		}
		runs = append(runs, r)
	}
	return runs
}

// partitionLine is export's summary: the partition the run went to.
var partitionLine = regexp.MustCompile(`/\*/date=([^/]*)/host=([^/]*)/run_id=([^ ]*) \(rows`)

// TestFleetQueries builds a 20-run dataset with `llmprof export --dataset`,
// then runs every query of docs/fleet.md in DuckDB, as the document writes
// it, and checks each answer against the runs' own `analyze --format json`.
func TestFleetQueries(t *testing.T) {
	bin := llmprof(t)
	work := t.TempDir()
	dataset := filepath.Join(work, "fleet")
	runs := fleetRuns()
	for k, r := range runs {
		in := filepath.Join(work, "in", fmt.Sprint(k))
		run(t, bin, append(r.demo, in)...)
		js, _ := run(t, bin, "analyze", "--format", "json", in)
		r.in, r.json = in, js
		if err := json.Unmarshal(js, &r.rep); err != nil {
			t.Fatal(err)
		}
		_, msg := run(t, bin, append(append([]string{"export", "--dataset", dataset}, r.export...), in)...)
		m := partitionLine.FindSubmatch(msg)
		if m == nil {
			t.Fatalf("run %s: no partition in export's output:\n%s", r.id, msg)
		}
		for i, p := range []*string{&r.date, &r.host} {
			if *p, _ = url.PathUnescape(string(m[i+1])); *p == "__HIVE_DEFAULT_PARTITION__" {
				t.Fatalf("run %s: partition %s", r.id, m[0])
			}
		}
	}
	// A run_id that is already there is refused, whatever its partition.
	cmd := exec.Command(bin, "export", "--dataset", dataset, "--run-id", runs[0].id, "--host", "elsewhere", "--date", "2027-01-01", filepath.Join(work, "in", "1"))
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "is already in the dataset: "+filepath.Join(dataset, "requests", "date=")) {
		t.Errorf("adding run_id %s again: %v\n%s", runs[0].id, err, out)
	}
	byID := map[string]*fleetRun{}
	for _, r := range runs {
		byID[r.id] = r
	}

	setup := fleetDoc(t, "setup")["duckdb"]
	q := fleetDoc(t, "query")
	t.Chdir(work) // the setup reads fleet/ relative to its parent
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The setup names the requests table and says the others are alike.
	for _, table := range []string{"requests", "tokens", "steps", "gpu_ops", "spans", "alignment"} {
		if _, err := db.Exec(strings.ReplaceAll(setup, "requests", table)); err != nil {
			t.Fatalf("setup for %s: %v\n%s", table, err, setup)
		}
	}
	query := func(t *testing.T, name string, each func(scan func(...any))) {
		t.Helper()
		text, ok := q[name]
		if !ok {
			t.Fatalf("docs/fleet.md has no query %q", name)
		}
		rows, err := db.Query(text)
		if err != nil {
			t.Fatalf("query %s: %v\n%s", name, err, text)
		}
		defer rows.Close()
		for rows.Next() {
			each(func(dest ...any) {
				if err := rows.Scan(dest...); err != nil {
					t.Fatal(err)
				}
			})
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The JSON report rounds to 1 ns (6 decimals of a ms).
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6+1e-9*math.Abs(b) }
	seen := func(t *testing.T, got map[string]bool, want []string) {
		t.Helper()
		for _, w := range want {
			if !got[w] {
				t.Errorf("no row for %s", w)
			}
		}
	}
	for _, name := range sortedKeys(q) {
		if !slices.Contains([]string{"ttft_by_tenant", "tenant_load", "gpu_by_category", "decode_by_model", "slowest_per_run", "daily_by_host"}, name) {
			t.Errorf("docs/fleet.md query %s is not checked by this test", name)
		}
	}

	t.Run("ttft_by_tenant", func(t *testing.T) {
		got := map[string]bool{}
		var want []string
		for _, r := range runs {
			for tenant, s := range r.rep.Requests.ByTenant {
				if s.Metrics.TTFT.N > 0 {
					want = append(want, r.id+" "+tenant)
				}
			}
		}
		query(t, "ttft_by_tenant", func(scan func(...any)) {
			var id, tenant string
			var n int
			var p50, p99 float64
			scan(&id, &tenant, &n, &p50, &p99)
			got[id+" "+tenant] = true
			w := byID[id].rep.Requests.ByTenant[tenant].Metrics.TTFT
			if n != w.N || !near(p50, w.P50) || !near(p99, w.P99) {
				t.Errorf("%s %s: n %d, p50 %.6f, p99 %.6f; analyze: n %d, p50 %.6f, p99 %.6f", id, tenant, n, p50, p99, w.N, w.P50, w.P99)
			}
		})
		seen(t, got, want)
	})

	t.Run("tenant_load", func(t *testing.T) {
		got := map[string]bool{}
		var want []string
		for _, r := range runs {
			for tenant := range r.rep.Requests.ByTenant {
				want = append(want, r.id+" "+tenant)
			}
		}
		query(t, "tenant_load", func(scan func(...any)) {
			var id, tenant string
			var n int
			var out, hits sql.NullInt64
			scan(&id, &tenant, &n, &out, &hits)
			got[id+" "+tenant] = true
			r := byID[id].rep
			w := r.Requests.ByTenant[tenant]
			wantHits := 0
			for _, kv := range r.KV.ByTenant {
				if kv.Name == tenant {
					wantHits = kv.Hits
				}
			}
			if n != w.Count || int(out.Int64) != w.OutputTokens || int(hits.Int64) != wantHits {
				t.Errorf("%s %s: %d requests, %d output tokens, %d KV hits; analyze: %d, %d, %d", id, tenant, n, out.Int64, hits.Int64, w.Count, w.OutputTokens, wantHits)
			}
		})
		seen(t, got, want)
	})

	t.Run("gpu_by_category", func(t *testing.T) {
		got := map[string]bool{}
		var want []string
		for _, r := range runs {
			for _, c := range r.rep.GPU.KernelCategories {
				if c.TotalMs > 0 {
					want = append(want, r.id+" "+c.Name)
				}
			}
		}
		if len(want) == 0 {
			t.Fatal("no run has GPU time")
		}
		query(t, "gpu_by_category", func(scan func(...any)) {
			var id, host, cat string
			var ops int
			var ms float64
			scan(&id, &host, &cat, &ops, &ms)
			got[id+" "+cat] = true
			r := byID[id]
			w := math.NaN()
			for _, c := range r.rep.GPU.KernelCategories {
				if c.Name == cat {
					w = c.TotalMs
				}
			}
			if host != r.host || !near(ms, w) || ops == 0 {
				t.Errorf("%s %s %s: %d ops, %.6f ms; analyze: %.6f ms on %s", id, host, cat, ops, ms, w, r.host)
			}
		})
		seen(t, got, want)
	})

	t.Run("decode_by_model", func(t *testing.T) {
		got := map[string]bool{}
		var want []string
		for _, r := range runs {
			for _, m := range r.rep.Tokens.ByModel {
				want = append(want, r.id+" "+m.Name)
			}
		}
		query(t, "decode_by_model", func(scan func(...any)) {
			var id, model string
			var tokens int
			var mean, gemm float64
			var rest int64
			scan(&id, &model, &tokens, &mean, &gemm, &rest)
			got[id+" "+model] = true
			for _, m := range byID[id].rep.Tokens.ByModel {
				if m.Name != model {
					continue
				}
				wgemm := math.NaN()
				for _, b := range m.Buckets {
					if b.Name == "gpu.gemm" {
						wgemm = b.TotalMs
					}
				}
				if tokens != m.Tokens || !near(mean, m.MeanInterval) || !near(gemm, wgemm) || rest != 0 {
					t.Errorf("%s %s: %d tokens, mean %.6f ms, GEMM %.6f ms, %d ns outside the buckets; analyze: %d, %.6f, %.6f",
						id, model, tokens, mean, gemm, rest, m.Tokens, m.MeanInterval, wgemm)
				}
				return
			}
			t.Errorf("%s %s: analyze has no such model", id, model)
		})
		seen(t, got, want)
	})

	t.Run("slowest_per_run", func(t *testing.T) {
		got := map[string]bool{}
		last := math.Inf(1)
		query(t, "slowest_per_run", func(scan func(...any)) {
			var id, req, tenant string
			var e2e float64
			var tokens int
			scan(&id, &req, &tenant, &e2e, &tokens)
			if got[id] {
				t.Errorf("%s: two rows", id)
			}
			got[id] = true
			if w := byID[id].rep.Requests.Metrics.E2E.Max; !near(e2e, w) || e2e > last || tokens == 0 {
				t.Errorf("%s %s: e2e %.6f ms (previous row %.6f), %d tokens; analyze: max e2e %.6f ms", id, req, e2e, last, tokens, w)
			}
			last = e2e
		})
		seen(t, got, sortedKeys(byID))
	})

	t.Run("daily_by_host", func(t *testing.T) {
		type cell struct{ runs, requests int }
		want := map[string]cell{}
		for _, r := range runs {
			c := want[r.date+" "+r.host]
			c.runs++
			c.requests += r.rep.Requests.Count
			want[r.date+" "+r.host] = c
		}
		if len(want) < 6 {
			t.Fatalf("only %d date × host partitions: %v", len(want), want)
		}
		got := map[string]cell{}
		query(t, "daily_by_host", func(scan func(...any)) {
			var date time.Time
			var host string
			var c cell
			scan(&date, &host, &c.runs, &c.requests)
			got[date.Format(time.DateOnly)+" "+host] = c
		})
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("runs and requests per day and host:\n got %v\nwant %v", got, want)
		}
	})
}

// shared is the real test data (LLMPROF_SHARED, else ../shared beside the
// repository).
func shared(t *testing.T) string {
	dir := os.Getenv("LLMPROF_SHARED")
	if dir == "" {
		dir = filepath.Join(root, "..", "shared")
	}
	dir = filepath.Join(dir, "testdata", "nsys")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("no real nsys exports: ", err)
	}
	return dir
}

// TestRealNsys: real Nsight Systems exports in a dataset answer the GPU
// query as analyze does, and read back whole.
func TestRealNsys(t *testing.T) {
	bin := llmprof(t)
	src := shared(t)
	work := t.TempDir()
	reps := map[string]analysis{}
	raw := map[string][]byte{}
	for i, name := range []string{"nvidia-fuser-report1-nsys2025.1.1.sqlite", "leiwang1999-memfusion-report1-nsys2023.1.2.sqlite"} {
		in := filepath.Join(src, name)
		js, _ := run(t, bin, "analyze", "--format", "json", in)
		var rep analysis
		if err := json.Unmarshal(js, &rep); err != nil {
			t.Fatal(err)
		}
		id := strings.TrimSuffix(name, ".sqlite")
		reps[id], raw[id] = rep, js
		run(t, bin, "export", "--dataset", filepath.Join(work, "fleet"), "--run-id", id, "--host", fmt.Sprintf("node-%d", i), "--date", "2026-12-01", in)
		got, _ := run(t, bin, "analyze", "--format", "json", "--parquet", filepath.Join(work, "fleet"), id)
		if got = restored.ReplaceAll(got, []byte(src+"/")); !bytes.Equal(got, js) {
			t.Errorf("%s: analyze --parquet differs from analyze of the file:\n%s", id, firstDiff(got, js))
		}
	}
	setup, query := fleetDoc(t, "setup")["duckdb"], fleetDoc(t, "query")["gpu_by_category"]
	t.Chdir(work)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(strings.ReplaceAll(setup, "requests", "gpu_ops")); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]bool{}
	for rows.Next() {
		var id, host, cat string
		var ops int
		var ms float64
		if err := rows.Scan(&id, &host, &cat, &ops, &ms); err != nil {
			t.Fatal(err)
		}
		got[id+" "+cat] = true
		w := math.NaN()
		for _, c := range reps[id].GPU.KernelCategories {
			if c.Name == cat {
				w = c.TotalMs
			}
		}
		if math.Abs(ms-w) > 1e-6+1e-9*math.Abs(w) {
			t.Errorf("%s %s: %.6f ms; analyze: %.6f", id, cat, ms, w)
		}
	}
	for id, rep := range reps {
		for _, c := range rep.GPU.KernelCategories {
			if c.TotalMs > 0 && !got[id+" "+c.Name] {
				t.Errorf("%s: no row for %s (%.6f ms)", id, c.Name, c.TotalMs)
			}
		}
	}
}

// restored is where analyze --parquet put a run's inputs: the one
// difference between its report and the original's is the inputs' paths.
var restored = regexp.MustCompile(`[^"\s]*llmprof-run-[0-9]+/[0-9]+/`)

// TestAnalyzeDataset: analyze --parquet DIR RUN_ID reads a run back from
// the dataset and reports exactly what analyze of the run's own files did,
// every section, the inputs' paths aside.
func TestAnalyzeDataset(t *testing.T) {
	bin := llmprof(t)
	work := t.TempDir()
	dataset := filepath.Join(work, "fleet")
	runs := fleetRuns()
	for _, k := range []int{5, 7, 11} { // an escaped run_id, no GPU data, vLLM's conventions
		r := runs[k]
		in := filepath.Join(work, "in", fmt.Sprint(k))
		run(t, bin, append(r.demo, in)...)
		want, _ := run(t, bin, "analyze", "--format", "json", in)
		run(t, bin, append(append([]string{"export", "--dataset", dataset}, r.export...), in)...)
		got, _ := run(t, bin, "analyze", "--format", "json", "--parquet", dataset, r.id)
		got = restored.ReplaceAll(got, []byte(filepath.Dir(in)+"/"))
		if !bytes.Equal(got, want) {
			t.Errorf("run %s: analyze --parquet differs from analyze of its files:\n%s", r.id, firstDiff(got, want))
		}
	}
}

// firstDiff shows where two reports first differ.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-200)
	return fmt.Sprintf("got  …%s…\nwant …%s…", a[lo:min(len(a), i+200)], b[lo:min(len(b), i+200)])
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
