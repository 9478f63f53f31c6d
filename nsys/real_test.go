package nsys

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// realFiles returns the real exports in the shared test data.
func realFiles(t *testing.T) []string {
	return shareddata.Glob(t, "testdata/nsys/*.sqlite")
}

var (
	decodedMu sync.Mutex
	decoded   = map[string]*ingest.Trace{}
)

// decodeReal decodes a real export once per test binary.
func decodeReal(t *testing.T, path string) *ingest.Trace {
	t.Helper()
	decodedMu.Lock()
	defer decodedMu.Unlock()
	if tr, ok := decoded[path]; ok {
		return tr
	}
	tr, err := Decoder{}.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	decoded[path] = tr
	return tr
}

func TestRealFilesDecode(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			count := func(q string) int {
				n, err := strconv.Atoi(sqlite3Rows(t, path, q)[0][0])
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			tableCount := func(table string) int {
				if len(sqlite3Rows(t, path, "SELECT name FROM sqlite_master WHERE name = '"+table+"'")) == 0 {
					return 0
				}
				return count("SELECT count(*) FROM " + table)
			}
			kinds := map[ingest.GPUOpKind]int{}
			for _, o := range tr.GPUOps {
				kinds[o.Kind]++
			}
			origins := map[ingest.SpanOrigin]int{}
			for _, s := range tr.Spans {
				origins[s.Origin]++
			}
			for _, c := range tr.APICalls {
				origins[c.Origin]++
			}
			nvtx := 0
			if tableCount("NVTX_EVENTS") > 0 {
				nvtx = count("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60, 70, 71)")
			}
			checks := []struct {
				what      string
				got, want int
			}{
				{"kernels", kinds[ingest.OpKernel], tableCount("CUPTI_ACTIVITY_KIND_KERNEL")},
				{"memcpys", kinds[ingest.OpMemcpy], tableCount("CUPTI_ACTIVITY_KIND_MEMCPY")},
				{"memsets", kinds[ingest.OpMemset], tableCount("CUPTI_ACTIVITY_KIND_MEMSET")},
				{"syncs", kinds[ingest.OpSync], tableCount("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")},
				{"API calls", origins[ingest.OriginCUDARuntime] + origins[ingest.OriginCUDADriver], tableCount("CUPTI_ACTIVITY_KIND_RUNTIME")},
				{"NVTX ranges and marks", origins[ingest.OriginNVTX], nvtx},
				{"threads", len(tr.Threads), tableCount("ThreadNames")},
				{"processes", len(tr.Processes), tableCount("PROCESSES")},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s: decoded %d, the file has %d", c.what, c.got, c.want)
				}
			}
			src := tr.Sources[0]
			if src.Clock.Kind != ingest.ClockNsysSession || src.Clock.Name != "nsys:"+filepath.Base(path) {
				t.Errorf("clock = %+v", src.Clock)
			}
			utc := sqlite3Rows(t, path, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")[0][0]
			if len(src.Anchors) != 1 || src.Anchors[0].Kind != ingest.AnchorEpoch || strconv.FormatInt(src.Anchors[0].RefLow, 10) != utc {
				t.Errorf("anchors = %+v, want one epoch anchor at %s", src.Anchors, utc)
			}
			if !strings.HasPrefix(src.Producer, "nsys 20") || src.Meta[MetaSchema] == "" {
				t.Errorf("producer %q meta %v", src.Producer, src.Meta)
			}
			// Absolute time = utcEpochNs + stored ts: the first kernel.
			if kinds[ingest.OpKernel] > 0 {
				first := sqlite3Rows(t, path, "SELECT start FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1")[0][0]
				want, _ := strconv.ParseInt(first, 10, 64)
				want += src.Anchors[0].RefLow
				for _, o := range tr.GPUOps {
					if o.Kind == ingest.OpKernel {
						if o.Start != want {
							t.Errorf("first kernel starts at %d, want utcEpochNs + %s = %d", o.Start, first, want)
						}
						break
					}
				}
			}
			for _, w := range tr.Warnings.List {
				t.Logf("warning: %s", w)
			}
		})
	}
}

// The environment tables must never reach the model: no string of the
// trace may come from TARGET_INFO_SYSTEM_ENV or META_DATA_CAPTURE's
// environment rows.
func TestRealFilesKeepEnvironmentOut(t *testing.T) {
	for _, path := range realFiles(t) {
		tr := decodeReal(t, path)
		env := map[string]bool{}
		if len(sqlite3Rows(t, path, "SELECT name FROM sqlite_master WHERE name = 'META_DATA_CAPTURE'")) > 0 {
			for _, r := range sqlite3Rows(t, path, "SELECT value FROM META_DATA_CAPTURE WHERE name LIKE '%ENVIRONMENT%'") {
				if len(r[0]) > 12 {
					env[r[0]] = true
				}
			}
		}
		for _, r := range sqlite3Rows(t, path, "SELECT value FROM TARGET_INFO_SYSTEM_ENV") {
			for _, line := range strings.Split(r[0], "\n") {
				if len(line) > 12 {
					env[line] = true
				}
			}
		}
		for id := 0; id < tr.Strings.Len(); id++ {
			if s := tr.Str(ingest.StrID(id)); env[s] {
				t.Errorf("%s: environment string %.40q… is in the model", filepath.Base(path), s)
			}
		}
		for k, v := range tr.Sources[0].Meta {
			if env[v] || strings.Contains(strings.ToUpper(k), "ENV") {
				t.Errorf("%s: meta %s=%.40q looks like environment", filepath.Base(path), k, v)
			}
		}
	}
}

// sqlStats is the SQL of a by-name summary over a derived table x(name, d):
// total, count, mean, median (mean of the two middle values for an even
// count), min, max and sample standard deviation, per name.
func sqlStats(derived string) string {
	return `WITH x AS (` + derived + `),
r AS (SELECT name, d, row_number() OVER (PARTITION BY name ORDER BY d) AS rn,
             count(*) OVER (PARTITION BY name) AS n, avg(d) OVER (PARTITION BY name) AS mean FROM x)
SELECT name, sum(d), count(*), avg(d),
       avg(CASE WHEN rn IN ((n + 1) / 2, (n + 2) / 2) THEN d END),
       min(d), max(d),
       CASE WHEN count(*) > 1 THEN sqrt(sum((d - mean) * (d - mean)) / (count(*) - 1)) ELSE 0 END,
       100.0 * sum(d) / (SELECT sum(d) FROM x)
FROM r GROUP BY name`
}

// compareSums checks Go summary rows against the SQL rows of sqlStats.
func compareSums(t *testing.T, label string, got []NameSum, sqlRows [][]string) {
	t.Helper()
	want := map[string][]string{}
	for _, r := range sqlRows {
		want[r[0]] = r
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d groups, SQL has %d", label, len(got), len(want))
	}
	for _, g := range got {
		w, ok := want[g.Name]
		if !ok {
			t.Errorf("%s: %q not in SQL result", label, g.Name)
			continue
		}
		gotCells := []float64{float64(g.Total), float64(g.Count), g.Avg, g.Med, float64(g.Min), float64(g.Max), g.StdDev, g.TimePct}
		for i, gv := range gotCells {
			wv, err := strconv.ParseFloat(w[i+1], 64)
			if err != nil {
				t.Fatalf("%s: SQL value %q: %v", label, w[i+1], err)
			}
			if math.Abs(gv-wv) > 1e-9*math.Max(1, math.Abs(wv)) {
				t.Errorf("%s %q column %d: Go %v, SQL %v", label, g.Name, i+1, gv, wv)
			}
		}
	}
}

// hasTable reports whether the export has the table; an export of a run
// that captured no kernels (weatherbench2's) has no CUPTI_ACTIVITY_KIND_KERNEL
// at all, and then the reports must be empty.
func hasTable(t *testing.T, path, name string) bool {
	t.Helper()
	return len(sqlite3Rows(t, path, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = '"+name+"'")) > 0
}

func TestKernelSummaryMatchesSQL(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			if !hasTable(t, path, "CUPTI_ACTIVITY_KIND_KERNEL") {
				if got := KernelSummary(tr, KernelDemangled); len(got) != 0 {
					t.Errorf("no kernel table, but %d kernel rows", len(got))
				}
				return
			}
			for _, c := range []struct {
				column string
				kn     KernelName
			}{{"demangledName", KernelDemangled}, {"shortName", KernelShort}} {
				q := sqlStats(`SELECT s.value AS name, k."end" - k.start AS d FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.` + c.column)
				compareSums(t, "kern_sum by "+c.column, KernelSummary(tr, c.kn), sqlite3Rows(t, path, q))
			}
		})
	}
}

func TestAPISummaryMatchesSQL(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			// The version suffix: "_v" and 4 or 5 digits at the end.
			strip := `CASE WHEN s.value GLOB '*_v[0-9][0-9][0-9][0-9]' AND NOT s.value GLOB '*_v[0-9][0-9][0-9][0-9][0-9]' THEN substr(s.value, 1, length(s.value) - 6)
			               WHEN s.value GLOB '*_v[0-9][0-9][0-9][0-9][0-9]' AND NOT s.value GLOB '*_v[0-9][0-9][0-9][0-9][0-9][0-9]' THEN substr(s.value, 1, length(s.value) - 7)
			               ELSE s.value END`
			q := sqlStats(`SELECT ` + strip + ` AS name, r."end" - r.start AS d FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId`)
			compareSums(t, "cuda_api_sum", APISummary(tr), sqlite3Rows(t, path, q))
		})
	}
}

func TestMemSummariesMatchSQL(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			var parts []string
			if hasTable(t, path, "CUPTI_ACTIVITY_KIND_MEMCPY") {
				parts = append(parts, `SELECT '[CUDA memcpy ' || e.label || ']' AS name, m."end" - m.start AS d, m.bytes AS b
				FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER e ON e.id = m.copyKind`)
			}
			if hasTable(t, path, "CUPTI_ACTIVITY_KIND_MEMSET") {
				parts = append(parts, `SELECT '[CUDA memset]' AS name, "end" - start AS d, bytes AS b FROM CUPTI_ACTIVITY_KIND_MEMSET`)
			}
			if len(parts) == 0 {
				if got := MemTimeSummary(tr); len(got) != 0 {
					t.Errorf("no memcpy or memset table, but %d rows", len(got))
				}
				return
			}
			ops := strings.Join(parts, " UNION ALL ")
			compareSums(t, "cuda_gpu_mem_time_sum", MemTimeSummary(tr), sqlite3Rows(t, path, sqlStats(`SELECT name, d FROM (`+ops+`)`)))
			compareSums(t, "cuda_gpu_mem_size_sum", MemSizeSummary(tr), sqlite3Rows(t, path, sqlStats(`SELECT name, b AS d FROM (`+ops+`)`)))
		})
	}
}

// nvtxRangesSQL derives the NVTX ranges as the decoder and the stats
// reports see them: name = "<domain>:" + coalesce(StringIds[textId], text),
// the domain found by domainId within the process; a range never closed
// ends at the last NVTX timestamp; ordinal numbers the NVTX spans (ranges
// and marks) in time order, as the model holds them.
const nvtxRangesSQL = `
dom AS (SELECT (e.globalTid >> 24) & 16777215 AS pid, e.domainId AS id, coalesce(s.value, e.text) AS name
        FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType = 75),
lastts AS (SELECT max(coalesce("end", start)) AS ts FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71)),
spans AS (SELECT e.rowid AS rid, e.*, row_number() OVER (ORDER BY e.start, e.rowid) AS ordinal
          FROM NVTX_EVENTS e WHERE e.eventType IN (34, 59, 60, 70, 71)),
rng AS (SELECT e.ordinal, e.start, max(coalesce(e."end", (SELECT ts FROM lastts)), e.start) AS en, e.globalTid, e.endGlobalTid,
          CASE WHEN e.eventType IN (59, 70) THEN 'PushPop' ELSE 'StartEnd' END AS style,
          CASE WHEN coalesce(e.domainId, 0) = 0 THEN ''
               ELSE coalesce((SELECT d.name FROM dom d WHERE d.id = e.domainId AND d.pid = (e.globalTid >> 24) & 16777215), 'domain ' || e.domainId) END
          || ':' || coalesce(s.value, e.text, '') AS name
        FROM spans e LEFT JOIN StringIds s ON s.id = e.textId WHERE e.eventType IN (59, 60, 70, 71))`

func hasNVTX(t *testing.T, path string) bool {
	return len(sqlite3Rows(t, path, "SELECT name FROM sqlite_master WHERE name = 'NVTX_EVENTS'")) > 0
}

// withoutNVTX reports whether the export has no NVTX table, failing the test
// if a report found rows in it anyway.
func withoutNVTX(t *testing.T, path string, rows int) bool {
	t.Helper()
	if hasNVTX(t, path) {
		return false
	}
	if rows != 0 {
		t.Fatalf("no NVTX_EVENTS, yet %d rows", rows)
	}
	return true
}

func TestNVTXSummaryMatchesSQL(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			got := NVTXSummary(tr)
			if withoutNVTX(t, path, len(got)) {
				return
			}
			q := `WITH ` + nvtxRangesSQL + `, named AS (SELECT style || '|' || name AS name, en - start AS d FROM rng), ` +
				strings.TrimPrefix(sqlStats(`SELECT name, d FROM named`), "WITH ")
			var sums []NameSum
			for _, g := range got {
				s := g.NameSum
				s.Name = g.Style + "|" + g.Name
				sums = append(sums, s)
			}
			compareSums(t, "nvtx_sum", sums, sqlite3Rows(t, path, q))
		})
	}
}

// projectionSQL is nvtx_gpu_proj_trace (stats definition) in SQL, with the
// hierarchy: each range's ops are those whose launching API call ran on
// the range's thread inside it; the parent is the tightest enclosing
// projected range on the thread.
const projectionSQL = `WITH ` + nvtxRangesSQL + `,
ops AS (SELECT start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL
        UNION ALL SELECT start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY %s),
j AS (SELECT o.start AS os, o."end" AS oe, a.correlationId AS corr, a.globalTid AS tid, a.start AS ast, a."end" AS aen
      FROM ops o JOIN CUPTI_ACTIVITY_KIND_RUNTIME a ON a.correlationId = o.correlationId AND (a.globalTid & -16777216) = o.globalPid),
proj AS (SELECT r.ordinal AS rid, r.name, r.style, r.globalTid AS tid, r.start, r.en, min(j.os) AS ps, max(j.oe) - min(j.os) AS pd,
                count(DISTINCT j.corr) AS n
         FROM rng r JOIN j ON j.tid = r.globalTid AND r.start <= j.ast AND r.en >= j.aen
         WHERE r.endGlobalTid IS NULL GROUP BY r.ordinal),
cand AS (SELECT c.rid AS child, p.rid AS parent,
                row_number() OVER (PARTITION BY c.rid ORDER BY (c.start - p.start) + (p.en - c.en), p.start DESC, p.en ASC, p.rid DESC) AS k
         FROM proj c JOIN proj p ON p.tid = c.tid AND p.rid != c.rid AND p.start <= c.start AND p.en >= c.en
                                 AND (p.start < c.start OR p.en > c.en OR p.rid < c.rid)),
par AS (SELECT c.rid, (SELECT parent FROM cand WHERE child = c.rid AND k = 1) AS parent FROM proj c),
lvl(rid, l, stack) AS (SELECT rid, 0, ':' || rid FROM par WHERE parent IS NULL
                       UNION ALL SELECT par.rid, lvl.l + 1, lvl.stack || ':' || par.rid FROM par JOIN lvl ON par.parent = lvl.rid)
SELECT p.name, p.ps, p.pd, p.start, p.en - p.start, p.style, (p.tid >> 24) & 16777215, p.tid & 16777215, p.n, lvl.l,
       (SELECT count(*) FROM par c WHERE c.parent = p.rid), p.rid, coalesce(par.parent, 0), lvl.stack
FROM proj p JOIN par ON par.rid = p.rid JOIN lvl ON lvl.rid = p.rid
ORDER BY p.ps, p.pd DESC, p.start, p.rid`

func TestNVTXProjectionMatchesSQL(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			got := NVTXProjection(tr)
			if withoutNVTX(t, path, len(got)) {
				return
			}
			memset := ""
			if len(sqlite3Rows(t, path, "SELECT name FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_MEMSET'")) > 0 {
				memset = `UNION ALL SELECT start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET`
			}
			want := sqlite3Rows(t, path, fmt.Sprintf(projectionSQL, memset))
			if len(got) != len(want) {
				t.Fatalf("%d projected ranges, SQL has %d", len(got), len(want))
			}
			for i, g := range got {
				row := []string{g.Name, itoa(g.ProjStart), itoa(g.ProjDur), itoa(g.OrigStart), itoa(g.OrigDur), g.Style,
					itoa(int64(g.PID)), itoa(int64(g.TID)), itoa(int64(g.NumGPUOps)), itoa(int64(g.Lvl)), itoa(int64(g.NumChild)),
					itoa(int64(g.RangeID)), itoa(int64(g.ParentID)), g.RangeStack}
				if strings.Join(row, "|") != strings.Join(want[i], "|") {
					t.Errorf("row %d:\n Go  %s\n SQL %s", i, strings.Join(row, "|"), strings.Join(want[i], "|"))
				}
			}
		})
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// The validation figures of docs/nsys-sqlite.md §5 for the NVIDIA/Fuser
// report1 export, to the nanosecond.
func TestFuserValidationFigures(t *testing.T) {
	path := shareddata.Path(t, "testdata/nsys/nvidia-fuser-report1-nsys2025.1.1.sqlite")
	tr := decodeReal(t, path)

	ks := KernelSummary(tr, KernelDemangled)
	var total int64
	for _, k := range ks {
		total += k.Total
	}
	if len(ks) != 16 || total != 10_167_602 {
		t.Errorf("kern_sum: %d names, total %d; want 16, 10167602", len(ks), total)
	}
	top := []struct {
		name  string
		pct   float64
		total int64
		n     int
	}{
		{"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", 21.5, 2_187_752, 1},
		{"nvjet_tst_192x192_64x3_1x2_h_bz_coopB_NTN", 21.0, 2_140_073, 1},
	}
	for i, w := range top {
		if k := ks[i]; k.Name != w.name || round1(k.TimePct) != w.pct || k.Total != w.total || k.Count != w.n {
			t.Errorf("kern_sum row %d = %q %.1f%% %d ×%d; want %q %.1f%% %d ×%d", i, k.Name, round1(k.TimePct), k.Total, k.Count, w.name, w.pct, w.total, w.n)
		}
	}

	ns := NVTXSummary(tr)
	inst := 0
	for _, n := range ns {
		inst += n.Count
	}
	if len(ns) != 188 || inst != 13_513 {
		t.Errorf("nvtx_sum: %d names, %d instances; want 188, 13513", len(ns), inst)
	}
	if n := ns[0]; n.Name != ":FusionKernelRuntime::compileFusionParallel" || n.Count != 10 || n.Total != 1_795_032_547 || n.Med != 187_090_954.5 {
		t.Errorf("nvtx_sum top = %q ×%d total %d med %.1f", n.Name, n.Count, n.Total, n.Med)
	}

	proj := NVTXProjection(tr)
	if len(proj) != 37 {
		t.Errorf("projected %d ranges, want 37", len(proj))
	}
	joined := 0
	opCall := launchJoin(tr, projectable)
	for _, c := range opCall {
		if c >= 0 {
			joined++
		}
	}
	if joined != 24 {
		t.Errorf("%d GPU ops joined to their launch, want 24", joined)
	}
	var launch, runFusion *NVTXProj
	for i := range proj {
		p := &proj[i]
		if p.Name == ":ExecutorRunFusion::cuLaunchKernel" && p.OrigStart == 8_737_328_935 {
			launch = p
		}
		if p.Name == ":FusionExecutorCache::runFusionWithInputs" && runFusion == nil {
			runFusion = p
		}
	}
	if launch == nil || launch.OrigDur != 42_960 || launch.ProjStart != 8_737_368_306 || launch.ProjDur != 380_732 {
		t.Errorf("ExecutorRunFusion::cuLaunchKernel at 8737328935 = %+v", launch)
	}
	if runFusion == nil || runFusion.ProjDur != 7_620_556 || runFusion.NumGPUOps != 6 {
		t.Errorf("FusionExecutorCache::runFusionWithInputs = %+v", runFusion)
	}

	// Join check: 18/18 kernels match a runtime row; min k.start − r.end = −3150 ns.
	kernels, matched, minGap := 0, 0, int64(math.MaxInt64)
	for i, o := range tr.GPUOps {
		if o.Kind != ingest.OpKernel {
			continue
		}
		kernels++
		if c := opCall[i]; c >= 0 {
			matched++
			minGap = min(minGap, o.Start-tr.APICalls[c].End)
		}
	}
	if kernels != 18 || matched != 18 || minGap != -3150 {
		t.Errorf("join: %d/%d kernels matched, min gap %d; want 18/18, -3150", matched, kernels, minGap)
	}
}

// cuda_kern_exec_sum against SQL: per thread, device, API function and
// kernel, the launch count, the launches with a queue time, and the sums and
// extremes of the total, API, queue and kernel times.
func TestKernelExecSummaryMatchesSQL(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			if !hasTable(t, path, "CUPTI_ACTIVITY_KIND_KERNEL") {
				if got := KernelExecSummary(tr, KernelDemangled); len(got) != 0 {
					t.Errorf("no kernel table, but %d groups", len(got))
				}
				return
			}
			rows := sqlite3Rows(t, path, `WITH j AS (
  SELECT (r.globalTid >> 24) & 16777215 AS pid, r.globalTid & 16777215 AS tid, k.deviceId AS dev, s.value AS api, kn.value AS kernel,
         max(r."end", k."end") - r.start AS total, r."end" - r.start AS a, k.start - r."end" AS q, k."end" - k.start AS kd
  FROM CUPTI_ACTIVITY_KIND_KERNEL k
  JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId AND (r.globalTid & -16777216) = k.globalPid
  JOIN StringIds s ON s.id = r.nameId JOIN StringIds kn ON kn.id = k.demangledName)
SELECT pid, tid, dev, api, kernel, count(*), sum(q >= 0), sum(total), min(total), max(total), sum(a), sum(CASE WHEN q >= 0 THEN q END), sum(kd)
FROM j GROUP BY pid, tid, dev, api, kernel`)
			want := map[string]string{}
			for _, r := range rows {
				want[strings.Join(r[:5], "|")] = strings.Join(r[5:], "|")
			}
			got := KernelExecSummary(tr, KernelDemangled)
			if len(got) != len(want) {
				t.Errorf("%d groups, SQL has %d", len(got), len(want))
			}
			sum := func(s Stats) string {
				if s.Count == 0 {
					return ""
				}
				return itoa(s.Total)
			}
			for _, g := range got {
				// The API name keeps nsys's version suffix in SQL.
				key := ""
				for k := range want {
					parts := strings.Split(k, "|")
					if parts[0] == itoa(int64(g.PID)) && parts[1] == itoa(int64(g.TID)) && parts[2] == itoa(int64(g.Device)) &&
						StripAPIVersion(parts[3]) == g.Func && parts[4] == g.Name {
						key = k
					}
				}
				line := strings.Join([]string{itoa(int64(g.Count)), itoa(int64(g.QCount)), itoa(g.Total.Total), itoa(g.Total.Min),
					itoa(g.Total.Max), itoa(g.API.Total), sum(g.Queue), itoa(g.Kernel.Total)}, "|")
				if key == "" || want[key] != line {
					t.Errorf("%s / %.60s: Go %s, SQL %s", g.Func, g.Name, line, want[key])
				}
			}
		})
	}
}

// nvtx_kern_sum against SQL: every (range, kernel) pair where the range
// encloses the kernel's launching call on its thread.
func TestNVTXKernelSummaryMatchesSQL(t *testing.T) {
	for _, path := range realFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr := decodeReal(t, path)
			got := NVTXKernelSummary(tr, KernelDemangled)
			if withoutNVTX(t, path, len(got)) {
				return
			}
			rows := sqlite3Rows(t, path, `WITH `+nvtxRangesSQL+`,
j AS (SELECT r.globalTid AS tid, r.start AS ast, r."end" AS aen, k."end" - k.start AS d, kn.value AS kernel
      FROM CUPTI_ACTIVITY_KIND_KERNEL k
      JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId AND (r.globalTid & -16777216) = k.globalPid
      JOIN StringIds kn ON kn.id = k.demangledName)
SELECT g.name, g.style, (g.globalTid >> 24) & 16777215, g.globalTid & 16777215, j.kernel, count(DISTINCT g.ordinal), count(*), sum(j.d), min(j.d), max(j.d)
FROM rng g JOIN j ON j.tid = g.globalTid AND g.start <= j.ast AND g.en >= j.aen
WHERE g.endGlobalTid IS NULL
GROUP BY g.name, g.style, g.globalTid, j.kernel`)
			want := map[string]string{}
			for _, r := range rows {
				want[strings.Join(r[:5], "|")] = strings.Join(r[5:], "|")
			}
			if len(got) != len(want) {
				t.Errorf("%d rows, SQL has %d", len(got), len(want))
			}
			for _, g := range got {
				key := strings.Join([]string{g.Range, g.Style, itoa(int64(g.PID)), itoa(int64(g.TID)), g.Kernel}, "|")
				line := strings.Join([]string{itoa(int64(g.Ranges)), itoa(int64(g.Count)), itoa(g.Total), itoa(g.Min), itoa(g.Max)}, "|")
				if want[key] != line {
					t.Errorf("%.80s: Go %s, SQL %s", key, line, want[key])
				}
			}
		})
	}
}
