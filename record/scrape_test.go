package record

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
