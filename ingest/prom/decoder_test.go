package prom

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// point is one decoded sample, keyed by its series for the tests.
type point struct {
	t int64
	v float64
}

func decodeFile(t *testing.T, path string) (*ingest.Trace, map[string][]point) {
	t.Helper()
	in, err := ingest.NewInput(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := &Decoder{}
	if !dec.Sniff(in) {
		t.Fatalf("%s: not sniffed as Prometheus text", path)
	}
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: path}}
	if err := dec.Decode(context.Background(), in, tr); err != nil {
		t.Fatal(err)
	}
	return tr, byKey(tr)
}

func byKey(tr *ingest.Trace) map[string][]point {
	out := map[string][]point{}
	for i := range tr.Samples {
		s := &tr.Samples[i]
		se := tr.SeriesOf(s)
		if se == nil {
			continue
		}
		k := tr.SeriesKey(se)
		out[k] = append(out[k], point{s.Time, s.Value})
	}
	return out
}

func seriesNamed(tr *ingest.Trace, name string) []*ingest.Series {
	var out []*ingest.Series
	for i := range tr.Series {
		if tr.Str(tr.Series[i].Name) == name {
			out = append(out, &tr.Series[i])
		}
	}
	return out
}

func TestDCGMExporter(t *testing.T) {
	tr, pts := decodeFile(t, "testdata/dcgm-exporter-1764583200.prom")
	if n := len(tr.Warnings.List); n != 0 {
		t.Fatalf("warnings: %v", tr.Warnings.List)
	}
	clock := seriesNamed(tr, "DCGM_FI_DEV_SM_CLOCK")
	if len(clock) != 2 {
		t.Fatalf("DCGM_FI_DEV_SM_CLOCK: %d series, want one per GPU", len(clock))
	}
	se := clock[0]
	if se.Type != ingest.MetricGauge {
		t.Errorf("SM clock type %v", se.Type)
	}
	for k, want := range map[string]string{"gpu": "0", "UUID": "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", "Hostname": "gpu-node-7",
		"modelName": "NVIDIA H100 80GB HBM3", "pci_bus_id": "00000000:18:00.0", "DCGM_FI_DRIVER_VERSION": "550.54.15", "device": "nvidia0"} {
		if got := tr.Label(se, k); got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	xid := seriesNamed(tr, "DCGM_FI_DEV_XID_ERRORS")
	if len(xid) != 1 || tr.Label(xid[0], "err_msg") != "GPU has fallen off the bus" || tr.Label(xid[0], "err_code") != "79" {
		t.Fatalf("XID series %+v", xid)
	}
	if e := seriesNamed(tr, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"); len(e) != 1 || e[0].Type != ingest.MetricCounter || e[0].Temporality != ingest.TemporalityCumulative {
		t.Errorf("energy counter %+v", e)
	}
	// No timestamps: the time in the file's name.
	const want = int64(1764583200) * 1e9
	for k, ps := range pts {
		if len(ps) != 1 || ps[0].t != want {
			t.Errorf("%s: %v, want one point at %d", k, ps, want)
		}
	}
	if got := tr.Sources[0].Format; got != "prometheus-text" {
		t.Errorf("format %q", got)
	}
	if got, want := len(tr.Series), 12; got != want {
		t.Errorf("%d series, want %d", got, want)
	}
}

func TestVLLMTextAndOpenMetricsAgree(t *testing.T) {
	tr, _ := decodeFile(t, "testdata/vllm-0.0.4-1764583200.prom")
	if len(tr.Warnings.List) != 0 {
		t.Fatalf("warnings: %v", tr.Warnings.List)
	}
	if got := tr.Sources[0].Meta["created_dropped"]; got != "2" {
		t.Errorf("created_dropped = %q, want 2", got)
	}
	p := seriesNamed(tr, "vllm:num_preemptions_total")
	if len(p) != 1 || p[0].Type != ingest.MetricCounter || tr.Label(p[0], "engine") != "0" {
		t.Fatalf("preemptions %+v", p)
	}
	// A histogram whose name ends in _total is still a histogram.
	it := seriesNamed(tr, "vllm:iteration_tokens_total_bucket")
	if len(it) != 4 || it[0].Type != ingest.MetricHistogram || tr.Str(it[0].Family) != "vllm:iteration_tokens_total" {
		t.Fatalf("iteration tokens %d series %+v", len(it), it)
	}
	if c := seriesNamed(tr, "vllm:iteration_tokens_total_count"); len(c) != 1 || c[0].Type != ingest.MetricHistogram {
		t.Fatalf("_count %+v", c)
	}
	if n := len(seriesNamed(tr, "vllm:request_success_total")); n != 3 {
		t.Errorf("%d request_success series, want one per finished_reason", n)
	}

	om, omPts := decodeFile(t, "testdata/vllm-openmetrics.txt")
	if len(om.Warnings.List) != 0 {
		t.Fatalf("warnings: %v", om.Warnings.List)
	}
	if got := om.Sources[0].Format; got != "openmetrics-text" {
		t.Errorf("format %q", got)
	}
	// The OpenMetrics counter family vllm:num_preemptions exposes the same
	// sample name as the 0.0.4 text.
	q := seriesNamed(om, "vllm:num_preemptions_total")
	if len(q) != 1 || q[0].Type != ingest.MetricCounter {
		t.Fatalf("OM preemptions %+v", q)
	}
	if om.Sources[0].Meta["created_dropped"] != "2" {
		t.Errorf("OM created_dropped %q", om.Sources[0].Meta["created_dropped"])
	}
	// le="1.0" and le="1" are the same bucket; float-second timestamps.
	k := `vllm:e2e_request_latency_seconds_bucket{engine="0",le="1",model_name="meta-llama/Llama-3.1-8B-Instruct"}`
	ps := omPts[k]
	if len(ps) != 1 || ps[0].v != 120 || ps[0].t != 1764583200250000000 {
		t.Fatalf("%s = %v (keys %v)", k, ps, keys(omPts))
	}
	if u := seriesNamed(om, "vllm:e2e_request_latency_seconds_sum"); len(u) != 1 || om.Str(u[0].Unit) != "seconds" {
		t.Errorf("unit %+v", u)
	}
}

func keys(m map[string][]point) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestNodeExporterTimestampedSamples(t *testing.T) {
	tr, pts := decodeFile(t, "testdata/node-exporter.prom")
	if len(tr.Warnings.List) != 0 {
		t.Fatalf("warnings: %v", tr.Warnings.List)
	}
	pause := pts[`node_ethtool_received_prio3_pause{device="ens1f0np0"}`]
	if len(pause) != 2 || pause[0] != (point{1764583200000000000, 1204}) || pause[1] != (point{1764583201000000000, 1388}) {
		t.Fatalf("pause samples %v", pause)
	}
	if se := seriesNamed(tr, "node_ethtool_received_prio3_pause"); se[0].Type != ingest.MetricUntyped {
		t.Errorf("ethtool series are untyped, got %v", se[0].Type)
	}
	if se := seriesNamed(tr, "node_infiniband_np_cnp_packets_sent_total"); len(se) != 1 || tr.Label(se[0], "port") != "1" || se[0].Type != ingest.MetricCounter {
		t.Errorf("CNP series %+v", se)
	}
}

func TestParseLines(t *testing.T) {
	cases := []struct {
		name, text string
		want       map[string][]point
		warn       string
	}{
		{"escapes", "m{a=\"x\\\"y\\\\z\\nw\"} 1 1764583200000\n",
			map[string][]point{`m{a="x\"y\\z\nw"}`: {{1764583200000000000, 1}}}, ""},
		{"utf8 name", `{"gpu.sm.clock", gpu="0"} 5 1764583200` + "\n",
			map[string][]point{`gpu.sm.clock{gpu="0"}`: {{1764583200000000000, 5}}}, ""},
		{"trailing comma and tabs", "m{a=\"1\",}\t2\t1764583200000\n",
			map[string][]point{`m{a="1"}`: {{1764583200000000000, 2}}}, ""},
		{"no time and no scrape time", "m 1\n", map[string][]point{}, "untimed-samples"},
		{"scrape comment", "# llmprof-scrape 1764583200123456789 http://x/metrics\nm 1\n# llmprof-scrape 1764583201000000000\nm 2\n",
			map[string][]point{"m": {{1764583200123456789, 1}, {1764583201000000000, 2}}}, ""},
		{"NaN dropped", "m NaN 1764583200000\n", map[string][]point{}, ""},
		{"bad value", "m abc 1764583200000\n", map[string][]point{}, "bad-sample"},
		{"hex value rejected", "m 0x10 1764583200000\n", map[string][]point{}, "bad-sample"},
		{"duplicate label", "m{a=\"1\",a=\"2\"} 1 1764583200000\n", map[string][]point{}, "duplicate-label"},
		{"unterminated", "m{a=\"1} 1\n", map[string][]point{}, "bad-sample"},
		{"after EOF", "m 1 1764583200\n# EOF\nm 2 1764583201\n",
			map[string][]point{"m": {{1764583200000000000, 1}}}, "after-eof"},
		{"CRLF", "m 1 1764583200000\r\n", map[string][]point{"m": {{1764583200000000000, 1}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := ingest.New()
			tr.Sources = []ingest.Source{{Path: "x.prom"}}
			st, err := Parse(context.Background(), tr, strings.NewReader(c.text), ParseInput{}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			Describe(tr, 0, st)
			got := byKey(tr)
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, w := range c.want {
				g := got[k]
				if len(g) != len(w) {
					t.Fatalf("%s: got %v, want %v", k, g, w)
				}
				for i := range w {
					if g[i] != w[i] {
						t.Errorf("%s[%d] = %v, want %v", k, i, g[i], w[i])
					}
				}
			}
			var codes []string
			for _, w := range tr.Warnings.List {
				codes = append(codes, w.Code)
			}
			if c.warn == "" && len(codes) > 0 || c.warn != "" && (len(codes) == 0 || codes[0] != c.warn) {
				t.Errorf("warnings %v, want %q", tr.Warnings.List, c.warn)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	yes := []string{
		"# HELP m help\n# TYPE m gauge\nm 1\n",
		"# TYPE m counter\n",
		"m{a=\"b\"} 1\n",
		"\n\n# just a comment\nup 1\n",
		"# llmprof-scrape 1 x\n",
	}
	no := []string{
		"# Title\n\nSome prose here.\n",
		"{\"resourceMetrics\":[]}\n",
		"# TYPE m nonsense\n",
		"hello world\n",
		"SQLite format 3\x00",
	}
	for _, s := range yes {
		if !Sniff([]byte(s)) {
			t.Errorf("Sniff(%q) = false", s)
		}
	}
	for _, s := range no {
		if Sniff([]byte(s)) {
			t.Errorf("Sniff(%q) = true", s)
		}
	}
}

func TestTimeFromName(t *testing.T) {
	cases := map[string]int64{
		"1764583200.prom":             1764583200e9,
		"scrape-1764583200123.txt":    1764583200123e6,
		"20251201T100000Z.prom":       1764583200e9,
		"2025-12-01T10:00:00.5Z.prom": 1764583200500e6,
		"dcgm_2025-12-01T10-00-00Z":   1764583200e9,
	}
	for name, want := range cases {
		if got, ok := TimeFromName(name); !ok || got != want {
			t.Errorf("TimeFromName(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	if _, ok := TimeFromName("metrics.prom"); ok {
		t.Error("metrics.prom has no time")
	}
}

func TestDirectoryOfScrapes(t *testing.T) {
	dir := t.TempDir()
	for i, v := range []string{"10", "11", "13"} {
		name := filepath.Join(dir, "vllm-"+[]string{"20251201T100000Z", "20251201T100001Z", "20251201T100002Z"}[i]+".prom")
		if err := os.WriteFile(name, []byte("# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} "+v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := ingest.Open(context.Background(), []string{dir}, []ingest.Decoder{&Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pts := byKey(tr)
	ps := pts[`vllm:num_requests_waiting{engine="0"}`]
	if len(ps) != 3 || ps[0] != (point{1764583200e9, 10}) || ps[2] != (point{1764583202e9, 13}) {
		t.Fatalf("merged scrapes %v (all %v)", ps, pts)
	}
	if len(tr.Series) != 3 {
		t.Errorf("%d series after merge: one per file (sources differ)", len(tr.Series))
	}
}
