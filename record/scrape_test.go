package record

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/prom"
)

func TestParseScrapeTarget(t *testing.T) {
	cases := []struct {
		in   string
		url  string
		iv   time.Duration
		fail bool
	}{
		{"http://localhost:8000/metrics", "http://localhost:8000/metrics", time.Second, false},
		{"http://localhost:9400/metrics@250ms", "http://localhost:9400/metrics", 250 * time.Millisecond, false},
		{"http://user@host:9100/metrics", "http://user@host:9100/metrics", time.Second, false},
		{"localhost:9100", "", 0, true},
		{"http://x/metrics@-1s", "", 0, true},
	}
	for _, c := range cases {
		got, err := ParseScrapeTarget(c.in)
		if c.fail {
			if err == nil {
				t.Errorf("%s: no error", c.in)
			}
			continue
		}
		if err != nil || got.URL != c.url || got.Interval != c.iv {
			t.Errorf("%s: %+v, %v", c.in, got, err)
		}
	}
}

// TestRecordScrape runs a recording with a local exporter serving vLLM-style
// Prometheus text and checks that the capture holds its scrapes, stamped on
// the recorder's clock, and decodes into labelled series.
func TestRecordScrape(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "text/plain") {
			t.Errorf("Accept %q", r.Header.Get("Accept"))
		}
		k := n.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		fmt.Fprintf(w, "# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.\n"+
			"# TYPE vllm:num_preemptions_total counter\n"+
			"vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} %d.0\n"+
			"# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n"+
			"# TYPE vllm:kv_cache_usage_perc gauge\n"+
			"vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n", k)
	}))
	defer srv.Close()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusServiceUnavailable)
	}))
	defer down.Close()

	rt := newRecordTest(t, "sh", "-c", "sleep 0.6")
	rt.opts.Scrapes = []ScrapeTarget{{URL: srv.URL + "/metrics", Interval: 100 * time.Millisecond}, {URL: down.URL + "/metrics", Interval: 100 * time.Millisecond}}
	before := time.Now().UnixNano()
	res := rt.run(t)
	after := time.Now().UnixNano()
	if res.Status != StatusComplete {
		t.Fatalf("status %s\n%s", res.Status, rt.log)
	}
	files, _ := filepath.Glob(filepath.Join(res.Dir, "metrics", "*.prom"))
	if len(files) != 2 {
		t.Fatalf("scrape files %v", files)
	}
	if !strings.Contains(rt.log.String(), "0 scrapes") || !strings.Contains(rt.log.String(), "HTTP 503") {
		t.Errorf("the failing target is not reported:\n%s", rt.log)
	}
	tr := decodeCapture(t, res.Dir, &CaptureDecoder{Embedded: []ingest.Decoder{&prom.Decoder{}}})
	var times []int64
	var last float64
	for i := range tr.Samples {
		s := &tr.Samples[i]
		se := tr.SeriesOf(s)
		if se == nil || tr.Str(se.Name) != "vllm:num_preemptions_total" {
			continue
		}
		if se.Type != ingest.MetricCounter || tr.Label(se, "model_name") != "m" {
			t.Fatalf("series %+v", se)
		}
		if s.Time < before || s.Time > after {
			t.Errorf("scrape at %d outside the recording [%d, %d]", s.Time, before, after)
		}
		if s.Value <= last {
			t.Errorf("counter went %v → %v", last, s.Value)
		}
		last = s.Value
		times = append(times, s.Time)
	}
	if len(times) < 3 {
		t.Fatalf("%d scrapes of the counter decoded (server saw %d); log:\n%s", len(times), n.Load(), rt.log)
	}
	src := tr.Sources[len(tr.Sources)-1]
	if src.Clock != tr.Sources[0].Clock {
		t.Errorf("scrape source on clock %+v, capture on %+v", src.Clock, tr.Sources[0].Clock)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "metrics")); err != nil {
		t.Fatal(err)
	}
}

// TestCaptureOTLPMetrics: metrics export requests the receiver stored
// (gRPC protobuf and HTTP JSON) decode into the capture's series, one series
// across requests.
func TestCaptureOTLPMetrics(t *testing.T) {
	request := func(at int64, v float64) pmetric.Metrics {
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		rm.Resource().Attributes().PutStr("service.name", "vllm")
		m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("vllm:kv_cache_usage_perc")
		p := m.SetEmptyGauge().DataPoints().AppendEmpty()
		p.SetTimestamp(pcommon.Timestamp(at))
		p.SetDoubleValue(v)
		p.Attributes().PutStr("engine", "0")
		return md
	}
	pb, _ := (&pmetric.ProtoMarshaler{}).MarshalMetrics(request(1_000_000_001_000, 0.5))
	js, _ := (&pmetric.JSONMarshaler{}).MarshalMetrics(request(1_000_000_002_000, 0.97))
	b := newCaptureBuilder(t, StatusComplete)
	writeRows(b, otlpSchema,
		OTLPPayload{Signal: SignalMetrics, Transport: "grpc", Encoding: EncodingProto, Payload: pb, Items: 1},
		OTLPPayload{Signal: SignalMetrics, Transport: "http", Encoding: EncodingJSON, Payload: js, Items: 1},
	)
	tr := decodeCapture(t, b.finish(), &CaptureDecoder{})
	if len(tr.Warnings.List) != 0 {
		t.Fatalf("warnings %v", tr.Warnings.List)
	}
	if len(tr.Series) != 1 {
		t.Fatalf("%d series, want one across both requests", len(tr.Series))
	}
	var got []float64
	for i := range tr.Samples {
		if s := &tr.Samples[i]; tr.SeriesOf(s) != nil {
			got = append(got, s.Value)
		}
	}
	if len(got) != 2 || got[0] != 0.5 || got[1] != 0.97 {
		t.Errorf("samples %v", got)
	}
	if tr.Sources[0].Samples != 2 {
		t.Errorf("capture source counts %d samples", tr.Sources[0].Samples)
	}
}

// TestScrapeHardening: a redirect to another host is not followed, a
// password in the URL never reaches the capture, a target that never
// answers is warned about at the end and when the capture is read, and a
// write error stops the target's scrapes with the error counted.
func TestScrapeHardening(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the redirect to another host was followed")
		fmt.Fprintln(w, "m 1")
	}))
	defer elsewhere.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// 127.0.0.1 and localhost are the same machine, another host name.
		http.Redirect(w, r, strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)+"/metrics", http.StatusFound)
	}))
	defer redirect.Close()
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "scraper" || p != "hunter2" {
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, "m 1")
	}))
	defer secret.Close()
	withPass := strings.Replace(secret.URL, "http://", "http://scraper:hunter2@", 1) + "/metrics"

	rt := newRecordTest(t, "sh", "-c", "sleep 0.4")
	rt.opts.Scrapes = []ScrapeTarget{{URL: redirect.URL + "/metrics", Interval: 100 * time.Millisecond}, {URL: withPass, Interval: 100 * time.Millisecond}}
	res := rt.run(t)
	if !strings.Contains(rt.log.String(), "another host than") || !strings.Contains(rt.log.String(), "warning: "+redirect.URL+"/metrics: no scrape of it succeeded") {
		t.Errorf("the redirect is not reported:\n%s", rt.log)
	}
	if !strings.Contains(rt.log.String(), "scraper:xxxxx@") {
		t.Errorf("the log does not show the redacted URL:\n%s", rt.log)
	}
	filepath.WalkDir(res.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "hunter2") {
			t.Errorf("%s holds the password", p)
		}
		return nil
	})
	if strings.Contains(rt.log.String(), "hunter2") {
		t.Error("the log shows the password")
	}
	tr := decodeCapture(t, res.Dir, &CaptureDecoder{Embedded: []ingest.Decoder{&prom.Decoder{}}})
	found := false
	for _, w := range tr.Warnings.List {
		found = found || w.Code == "scrape-empty"
	}
	if !found {
		t.Errorf("no scrape-empty warning reading the capture: %v", tr.Warnings.List)
	}

	// A full disk (/dev/full) ends the target's scrapes with the error kept.
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	s := &scraper{stats: []ScrapeStats{{URL: secret.URL}}}
	done := make(chan struct{})
	go func() {
		s.run(context.Background(), 0, ScrapeTarget{URL: withPass, Interval: time.Hour}, full, sameHostRedirects(&http.Client{}))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the scrape loop went on after a write error")
	}
	if st := s.stats[0]; !st.WriteFailed || st.Scrapes != 0 || !strings.Contains(st.LastError, "writing the capture") {
		t.Errorf("stats after a write error: %+v", st)
	}
}
