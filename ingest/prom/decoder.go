package prom

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// Decoder reads a Prometheus or OpenMetrics text file into an ingest.Trace.
// It implements ingest.Decoder; the zero value is ready to use.
type Decoder struct {
	Options Options
}

var _ ingest.Decoder = (*Decoder)(nil)

// Name is "prometheus".
func (*Decoder) Name() string { return "prometheus" }

// Sniff reports whether a file's head is exposition text: its first lines
// are # HELP, # TYPE or # UNIT metadata with a metric name, or a sample line
// that parses, after at most a few other comments.
func (*Decoder) Sniff(in *ingest.Input) bool {
	return !in.Dir && Sniff(in.Head)
}

// Sniff reports whether head looks like Prometheus or OpenMetrics text.
func Sniff(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	var buf []byte
	for n := 0; n < 32 && len(head) > 0; n++ {
		line := head
		nl := bytes.IndexByte(head, '\n')
		if nl < 0 {
			// The head may end inside a line; only a whole one decides.
			if len(head) >= ingest.HeadSize {
				return false
			}
			head = nil
		} else {
			line, head = head[:nl], head[nl+1:]
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		line = bytes.TrimLeft(line, " \t")
		if len(line) == 0 {
			continue
		}
		if line[0] != '#' {
			_, problem := parseSampleLine(line, &buf)
			return problem == ""
		}
		if bytes.HasPrefix(line, []byte(scrapeComment)) {
			return true
		}
		for _, kw := range []string{"# TYPE ", "# HELP ", "# UNIT "} {
			if rest, ok := bytes.CutPrefix(line, []byte(kw)); ok {
				_, after, ok := metaName(rest, &buf)
				if !ok {
					return false
				}
				if kw == "# TYPE " {
					_, _, known := typeOf(string(bytes.TrimSpace(after)))
					return known
				}
				return true
			}
		}
	}
	return false
}

// Decode parses the file. Samples without a timestamp take the time in the
// file's name, else its modification time (with a warning).
func (dec *Decoder) Decode(ctx context.Context, in *ingest.Input, t *ingest.Trace) error {
	rc, err := in.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	src := &t.Sources[0]
	pin := ParseInput{Source: 0, Budget: in.MetricBudget()}
	if ns, ok := TimeFromName(filepath.Base(in.Path)); ok {
		pin.ScrapeTime = ns
		setMeta(src, "scrape_time", "file name")
	} else if st, err := os.Stat(in.Path); err == nil {
		pin.ScrapeTime = st.ModTime().UnixNano()
		setMeta(src, "scrape_time", "file modification time")
	}
	stats, err := Parse(ctx, t, rc, pin, dec.Options)
	if err != nil {
		return err
	}
	Describe(t, 0, stats)
	if in.Compression != ingest.CompressionNone {
		setMeta(src, "compression", in.Compression.String())
	}
	if src.Meta["scrape_time"] == "file modification time" && stats.Samples > 0 && untimedUsed(t, pin.ScrapeTime) {
		t.Warnf(0, "", "scrape-time-mtime", "samples have no timestamps and the file name holds no time; using the file's modification time (%s)",
			time.Unix(0, pin.ScrapeTime).UTC().Format(time.RFC3339))
	}
	return nil
}

// untimedUsed reports whether any sample took the fallback time.
func untimedUsed(t *ingest.Trace, at int64) bool {
	for i := range t.Samples {
		if t.Samples[i].Time == at {
			return true
		}
	}
	return false
}

// Describe fills a source's format, counts, clock and facts from a parse.
func Describe(t *ingest.Trace, src ingest.SourceID, st Stats) {
	s := &t.Sources[src]
	s.Format = "prometheus-text"
	if st.OpenMetrics {
		s.Format = "openmetrics-text"
	}
	s.Samples += st.Samples
	if s.Clock.Name == "" {
		s.Clock = ingest.ClockDomain{Name: "realtime", Kind: ingest.ClockRealtime}
	}
	setMeta(s, "series", strconv.Itoa(st.Series))
	if st.Scrapes > 0 {
		setMeta(s, "scrapes", strconv.Itoa(st.Scrapes))
	}
	if st.Created > 0 {
		setMeta(s, "created_dropped", strconv.Itoa(st.Created))
	}
	if st.NonFinite > 0 {
		setMeta(s, "non_finite_dropped", strconv.Itoa(st.NonFinite))
	}
	if st.Untimed > 0 {
		t.Warnf(src, "", "untimed-samples", "%d sample(s) without a timestamp and no scrape time; dropped", st.Untimed)
	}
}

func setMeta(s *ingest.Source, k, v string) {
	if s.Meta == nil {
		s.Meta = map[string]string{}
	}
	s.Meta[k] = v
}

var (
	// 2025-12-01T10:00:00Z, 2025-12-01T10-00-00.123Z, 20251201T100000Z.
	isoName  = regexp.MustCompile(`(\d{4})-?(\d{2})-?(\d{2})[T_](\d{2})[:-]?(\d{2})[:-]?(\d{2})(\.\d{1,9})?(Z)?`)
	unixName = regexp.MustCompile(`(^|[^0-9])(\d{10}|\d{13}|\d{16}|\d{19})([^0-9]|$)`)
)

// TimeFromName finds a scrape time in a file name: an ISO 8601 date-time
// (UTC unless it says otherwise; colons may be dashes) or Unix seconds,
// milliseconds, microseconds or nanoseconds (10, 13, 16 or 19 digits).
func TimeFromName(name string) (int64, bool) {
	if m := isoName.FindStringSubmatch(name); m != nil {
		frac := m[7]
		s := m[1] + "-" + m[2] + "-" + m[3] + "T" + m[4] + ":" + m[5] + ":" + m[6] + frac + "Z"
		if tm, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return tm.UnixNano(), true
		}
	}
	if m := unixName.FindStringSubmatch(name); m != nil {
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return 0, false
		}
		switch len(m[2]) {
		case 10:
			return n * 1e9, true
		case 13:
			return n * 1e6, true
		case 16:
			return n * 1e3, true
		}
		return n, true
	}
	return 0, false
}
