package record

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// DefaultScrapeInterval is the period of a --scrape target without @interval.
const DefaultScrapeInterval = time.Second

// maxScrapeBytes bounds one scrape body: a node_exporter page is a few
// hundred kilobytes; more is not a metrics page.
const maxScrapeBytes = 64 << 20

// ScrapeTarget is a Prometheus endpoint scraped during the capture.
type ScrapeTarget struct {
	URL      string
	Interval time.Duration
}

// shown is the target's URL as the capture stores it: a password in the
// URL (http://user:pass@host/) is replaced by "xxxxx", since a capture is
// shared.
func (tg ScrapeTarget) shown() string {
	u, err := url.Parse(tg.URL)
	if err != nil {
		return tg.URL
	}
	return u.Redacted()
}

// ParseScrapeTarget parses URL[@interval], e.g.
// "http://localhost:8000/metrics@500ms" (default interval 1 s).
func ParseScrapeTarget(s string) (ScrapeTarget, error) {
	st := ScrapeTarget{URL: s, Interval: DefaultScrapeInterval}
	if i := strings.LastIndexByte(s, '@'); i > 0 {
		if d, err := time.ParseDuration(s[i+1:]); err == nil {
			if d <= 0 {
				return st, fmt.Errorf("--scrape %s: the interval must be positive", s)
			}
			st.URL, st.Interval = s[:i], d
		}
	}
	u, err := url.Parse(st.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return st, fmt.Errorf("--scrape %s: want an http(s) URL, optionally followed by @interval", s)
	}
	return st, nil
}

// scrapeDir is where the scrapes go inside a capture; the capture decoder
// reads every *.prom file in it.
const scrapeDir = "metrics"

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// scrapeFile names the file of target i: its host, port and path.
func scrapeFile(i int, target string) string {
	u, _ := url.Parse(target)
	name := strings.Trim(unsafeName.ReplaceAllString(u.Host+u.Path, "_"), "_")
	if len(name) > 80 {
		name = name[:80]
	}
	return fmt.Sprintf("%02d-%s.prom", i+1, name)
}

// scraper scrapes its targets until stopped. Each scrape is appended to the
// target's file as Prometheus text under a "# llmprof-scrape <unix ns> <url>"
// line, the time of the scrape's start on the recorder's clock (the
// reference clock of the capture), which ingest/prom gives every sample
// without a timestamp of its own.
type scraper struct {
	wg      sync.WaitGroup
	cancel  context.CancelFunc
	mu      sync.Mutex
	stats   []ScrapeStats
	stopped bool
}

// ScrapeStats counts one target's scrapes.
type ScrapeStats struct {
	URL            string `json:"url"`
	File           string `json:"file"`
	Scrapes, Fails int
	LastError      string `json:"last_error,omitempty"`
	// WriteFailed is set when the scrapes stopped because the capture
	// could not be written.
	WriteFailed bool `json:"write_failed,omitempty"`
}

// sameHostRedirects returns a copy of c that follows a redirect only to the
// target's own scheme and host: a metrics endpoint that sends the scraper
// elsewhere (another host, or https to http) is an error that says where,
// not a page silently taken from somewhere else.
func sameHostRedirects(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
			return fmt.Errorf("redirected to %s, another host than %s: not followed", req.URL.Redacted(), first.Host)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cc
}

// startScrapers opens one file per target under dir/metrics and scrapes
// each on its own ticker, the first scrape at once (client nil: the default).
func startScrapers(dir string, targets []ScrapeTarget, client *http.Client) (*scraper, error) {
	s := &scraper{}
	if client == nil {
		client = &http.Client{}
	}
	client = sameHostRedirects(client)
	if len(targets) == 0 {
		return s, nil
	}
	if err := os.MkdirAll(filepath.Join(dir, scrapeDir), 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	var files []*os.File
	for i, tg := range targets {
		rel := scrapeDir + "/" + scrapeFile(i, tg.URL)
		f, err := os.OpenFile(filepath.Join(dir, filepath.FromSlash(rel)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			cancel()
			for _, f := range files {
				f.Close()
			}
			return nil, err
		}
		files = append(files, f)
		s.stats = append(s.stats, ScrapeStats{URL: tg.shown(), File: rel})
	}
	for i, tg := range targets {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer files[i].Close()
			s.run(ctx, i, tg, files[i], client)
		}()
	}
	return s, nil
}

func (s *scraper) run(ctx context.Context, i int, tg ScrapeTarget, f *os.File, client *http.Client) {
	w := bufio.NewWriter(f)
	defer w.Flush()
	t := time.NewTicker(tg.Interval)
	defer t.Stop()
	for {
		at := time.Now()
		body, err := scrapeOnce(ctx, client, tg)
		if ctx.Err() != nil && err != nil {
			return
		}
		s.mu.Lock()
		st := &s.stats[i]
		if err != nil {
			st.Fails++
			st.LastError = err.Error()
		} else {
			st.Scrapes++
		}
		s.mu.Unlock()
		if err == nil {
			fmt.Fprintf(w, "%s%d %s\n", "# llmprof-scrape ", at.UnixNano(), tg.shown())
			w.Write(body)
			if len(body) > 0 && body[len(body)-1] != '\n' {
				w.WriteByte('\n')
			}
			// bufio keeps the first write error: a full disk ends this
			// target's scrapes, counted and reported, not ignored.
			if werr := w.Flush(); werr != nil {
				s.mu.Lock()
				st.Scrapes--
				st.Fails++
				st.LastError = "writing the capture: " + werr.Error()
				st.WriteFailed = true
				s.mu.Unlock()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// scrapeOnce fetches one page as Prometheus text 0.0.4 (what every
// client library serves by default; OpenMetrics only on request).
func scrapeOnce(ctx context.Context, client *http.Client, tg ScrapeTarget) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, max(tg.Interval, time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tg.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxScrapeBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxScrapeBytes {
		return nil, errors.New("page over 64 MiB")
	}
	return body, nil
}

// stop ends the scrapes, waits for the files to be written and returns the
// counts.
func (s *scraper) stop() []ScrapeStats {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ScrapeStats(nil), s.stats...)
}

// decodeScrapes decodes the --scrape files of a capture (metrics/*.prom)
// with whichever Embedded decoder recognizes them, each as a further source
// on the capture's realtime clock: the recorder stamped every scrape.
func (d *CaptureDecoder) decodeScrapes(ctx context.Context, c *Capture, t *ingest.Trace) error {
	paths, _ := filepath.Glob(filepath.Join(c.Dir, scrapeDir, "*.prom"))
	for _, path := range paths {
		in, err := ingest.NewInput(path)
		if err != nil {
			t.Warnf(srcCapture, "", "capture-embedded", "scrape file %s: %v", filepath.Base(path), err)
			continue
		}
		if len(in.Head) == 0 {
			t.Warnf(srcCapture, "", "scrape-empty", "scrape file %s is empty: its target never answered during the capture (the capture's scrape events say why)", filepath.Base(path))
			continue
		}
		var dec ingest.Decoder
		for _, e := range d.Embedded {
			if e.Sniff(in) {
				dec = e
				break
			}
		}
		if dec == nil {
			t.Warnf(srcCapture, "", "capture-embedded", "scrape file %s not decoded: no Prometheus decoder in this build, or not Prometheus text", filepath.Base(path))
			continue
		}
		sub := ingest.New()
		sub.Sources = []ingest.Source{{Path: path, Format: dec.Name()}}
		if err := dec.Decode(ctx, in, sub); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t.Warnf(srcCapture, "", "capture-embedded", "scrape file %s: %v", filepath.Base(path), err)
			continue
		}
		if int(srcCapture) < len(t.Sources) {
			sub.Sources[0].Clock = t.Sources[srcCapture].Clock
		}
		*t = *ingest.Merge(t, sub)
	}
	return nil
}

// stopScrapers stops the scrapes once and records each target's counts as
// a capture event.
func (r *recording) stopScrapers(s *scraper) {
	if s == nil || s.stopped {
		return
	}
	s.stopped = true
	for _, st := range s.stop() {
		detail := fmt.Sprintf("%s → %s: %d scrapes, %d failed", st.URL, st.File, st.Scrapes, st.Fails)
		if st.LastError != "" {
			detail += " (last: " + st.LastError + ")"
		}
		r.event("scrape", detail, nil)
		fmt.Fprintf(r.opts.Log, "llmprof record: scraped %s\n", detail)
		if st.Scrapes == 0 || st.WriteFailed {
			// The command's exit code stays record's (docs/record.md),
			// so the failure is said where it cannot be missed.
			what := "no scrape of it succeeded"
			if st.WriteFailed {
				what = "its scrapes could not be written to the capture"
			}
			fmt.Fprintf(r.opts.Log, "llmprof record: warning: %s: %s; the capture has no metrics from it\n", st.URL, what)
			r.event("scrape-failed", st.URL+": "+what, nil)
		}
	}
}
