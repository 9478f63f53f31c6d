package prom

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
)

// DefaultMaxLineBytes is the default of Options.MaxLineBytes: a line of a
// scrape is a few hundred bytes; one of a megabyte is not exposition.
const DefaultMaxLineBytes = 1 << 20

// scrapeComment marks the start of one scrape in a file of several, with its
// time in Unix nanoseconds: "# llmprof-scrape 1764583200000000000 <target>".
// Prometheus tools read it as a comment.
const scrapeComment = "# llmprof-scrape "

// Options tune parsing. The zero value means the defaults.
type Options struct {
	// MaxLineBytes bounds one line; a longer one is skipped with a warning.
	// 0 means DefaultMaxLineBytes.
	MaxLineBytes int `json:"max_line_bytes"`
}

// ParseInput says where a stream of exposition text comes from.
type ParseInput struct {
	// Source is the trace source the samples belong to.
	Source ingest.SourceID
	// ScrapeTime (Unix ns) is the time of samples without a timestamp
	// before the first "# llmprof-scrape" comment; 0 when unknown, in which
	// case such samples are dropped with a warning.
	ScrapeTime int64
	// Labels are added to every series (for example the scrape target as
	// "instance"); a label the series already has wins.
	Labels map[string]string
}

// Stats counts what a parse kept and dropped.
type Stats struct {
	Samples, Series int
	// Created counts the dropped _created samples, NonFinite the NaN and
	// infinite values dropped, Untimed the samples dropped for want of a time.
	Created, NonFinite, Untimed int
	// OpenMetrics is set when the text used OpenMetrics-only syntax (# EOF,
	// # UNIT, exemplars, OpenMetrics-only types).
	OpenMetrics bool
	// Scrapes counts the "# llmprof-scrape" sections.
	Scrapes int
}

// family is what # TYPE and # UNIT declared for a metric family name.
type family struct {
	typ     ingest.MetricType
	om      string // the declared type word
	unit    ingest.StrID
	hasType bool
}

// parser holds the state of one stream.
type parser struct {
	t      *ingest.Trace
	in     ParseInput
	series *ingest.SeriesTable
	fams   map[string]*family
	now    int64
	line   int
	eof    bool
	stats  Stats

	extra  []ingest.Attr
	labels []ingest.Attr
	seen   map[string]bool
	buf    []byte
}

// Parse reads Prometheus or OpenMetrics text from r into t: every sample
// becomes a Sample of its labelled Series. Malformed lines are warnings
// naming the line; only a read error is returned.
func Parse(ctx context.Context, t *ingest.Trace, r io.Reader, in ParseInput, opts Options) (Stats, error) {
	maxLine := opts.MaxLineBytes
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	p := &parser{t: t, in: in, series: ingest.NewSeriesTable(t), fams: map[string]*family{}, now: in.ScrapeTime, seen: map[string]bool{}}
	for k, v := range in.Labels {
		p.extra = append(p.extra, ingest.NewAttr(t.Strings.Intern(k), ingest.StringValue(t.Strings.Intern(v))))
	}
	seriesBefore := len(t.Series)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		if p.line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return p.stats, err
			}
		}
		line, tooLong, err := readLine(br, maxLine)
		if err != nil && err != io.EOF {
			return p.stats, err
		}
		if line == nil && tooLong == 0 && err == io.EOF {
			break
		}
		p.line++
		if tooLong > 0 {
			p.warn("line-too-long", "line of %d bytes is longer than %d; skipped", tooLong, maxLine)
		} else {
			p.parseLine(line)
		}
		if err == io.EOF {
			break
		}
	}
	p.stats.Series = len(t.Series) - seriesBefore
	return p.stats, nil
}

// readLine returns the next line without its terminator. A line longer than
// max is consumed without being kept; its length comes back as tooLong.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong int, err error) {
	var long []byte
	n := 0
	for {
		frag, err := br.ReadSlice('\n')
		n += len(frag)
		if err == bufio.ErrBufferFull {
			if n <= max {
				long = append(long, frag...)
			}
			continue
		}
		if n == 0 && err == io.EOF {
			return nil, 0, io.EOF
		}
		if n > max+1 || (n > max && (len(frag) == 0 || frag[len(frag)-1] != '\n')) {
			return nil, n, err
		}
		if long != nil {
			frag = append(long, frag...)
		}
		frag = bytes.TrimSuffix(frag, []byte("\n"))
		frag = bytes.TrimSuffix(frag, []byte("\r"))
		if frag == nil {
			frag = []byte{}
		}
		return frag, 0, err
	}
}

func (p *parser) warn(code, format string, args ...any) {
	p.t.Warnf(p.in.Source, "line "+strconv.Itoa(p.line), code, format, args...)
}

func (p *parser) parseLine(line []byte) {
	line = bytes.TrimLeft(line, " \t")
	if len(line) == 0 {
		return
	}
	if p.line == 1 {
		line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
	}
	if line[0] == '#' {
		p.comment(line)
		return
	}
	if p.eof {
		p.warn("after-eof", "sample after # EOF; ignored")
		return
	}
	s, msg := parseSampleLine(line, &p.buf)
	if msg != "" {
		p.warn("bad-sample", "%s: %s", msg, truncate(line))
		return
	}
	if s.exemplar {
		p.stats.OpenMetrics = true
	}
	p.add(&s)
}

func (p *parser) comment(line []byte) {
	switch {
	case bytes.HasPrefix(line, []byte(scrapeComment)):
		f := bytes.Fields(line[len(scrapeComment):])
		if len(f) == 0 {
			p.warn("bad-scrape-comment", "# llmprof-scrape without a time")
			return
		}
		ns, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || ns <= 0 {
			p.warn("bad-scrape-comment", "# llmprof-scrape time %q is not Unix nanoseconds", f[0])
			return
		}
		p.now = ns
		p.stats.Scrapes++
		p.eof = false
		return
	case string(bytes.TrimRight(line, " \t")) == "# EOF":
		p.eof = true
		p.stats.OpenMetrics = true
		return
	}
	f := bytes.Fields(line[1:])
	if len(f) < 2 {
		return
	}
	kw := string(f[0])
	if kw != "TYPE" && kw != "UNIT" && kw != "HELP" {
		return
	}
	name, rest, ok := metaName(bytes.TrimLeft(line[1:], " \t")[len(kw):], &p.buf)
	if !ok {
		p.warn("bad-metadata", "# %s with a malformed metric name", kw)
		return
	}
	switch kw {
	case "TYPE":
		word := string(bytes.TrimSpace(rest))
		typ, om, known := typeOf(word)
		if !known {
			p.warn("bad-metadata", "# TYPE %s %q: unknown type; treated as untyped", name, word)
		}
		if om {
			p.stats.OpenMetrics = true
		}
		f := p.fam(name)
		f.typ, f.om, f.hasType = typ, word, true
	case "UNIT":
		p.stats.OpenMetrics = true
		if u := string(bytes.TrimSpace(rest)); u != "" {
			p.fam(name).unit = p.t.Strings.Intern(u)
		}
	}
}

func (p *parser) fam(name string) *family {
	f := p.fams[name]
	if f == nil {
		f = &family{}
		p.fams[name] = f
	}
	return f
}

// typeOf maps a # TYPE word to the model's type; om is set for the
// OpenMetrics-only words.
func typeOf(word string) (typ ingest.MetricType, om, known bool) {
	switch word {
	case "counter":
		return ingest.MetricCounter, false, true
	case "gauge":
		return ingest.MetricGauge, false, true
	case "histogram":
		return ingest.MetricHistogram, false, true
	case "summary":
		return ingest.MetricSummary, false, true
	case "untyped":
		return ingest.MetricUntyped, false, true
	case "gaugehistogram":
		return ingest.MetricHistogram, true, true
	case "info", "stateset":
		return ingest.MetricGauge, true, true
	case "unknown":
		return ingest.MetricUntyped, true, true
	}
	return ingest.MetricUntyped, false, false
}

// suffixes are the sample-name suffixes that fold into a declared family.
var suffixes = []string{"_bucket", "_count", "_sum", "_total", "_created", "_gcount", "_gsum", "_info"}

// resolve finds the family a sample name belongs to. drop is set for a
// _created series of a counter, histogram or summary.
func (p *parser) resolve(name string) (fam string, f *family, drop bool) {
	if f := p.fams[name]; f != nil && f.hasType {
		if base, ok := cutSuffix(name, "_created"); ok && f.typ == ingest.MetricGauge && p.hasTotals(base) {
			return name, f, true
		}
		return name, f, false
	}
	for _, suf := range suffixes {
		base, ok := cutSuffix(name, suf)
		if !ok {
			continue
		}
		f := p.fams[base]
		if f == nil || !f.hasType {
			continue
		}
		if suf == "_created" {
			return base, f, f.typ == ingest.MetricCounter || f.typ == ingest.MetricHistogram || f.typ == ingest.MetricSummary
		}
		return base, f, false
	}
	return name, p.fams[name], false
}

// hasTotals reports whether base (a _created series' name without the
// suffix) is a counter, histogram or summary family, as client_python's
// trailing "<name>_created gauge" families are.
func (p *parser) hasTotals(base string) bool {
	for _, n := range []string{base, base + "_total"} {
		if f := p.fams[n]; f != nil {
			switch f.typ {
			case ingest.MetricCounter, ingest.MetricHistogram, ingest.MetricSummary:
				return true
			}
		}
	}
	return false
}

func cutSuffix(s, suf string) (string, bool) {
	if len(s) > len(suf) && s[len(s)-len(suf):] == suf {
		return s[:len(s)-len(suf)], true
	}
	return s, false
}

func (p *parser) add(s *sampleLine) {
	famName, f, drop := p.resolve(s.name)
	if drop {
		p.stats.Created++
		return
	}
	if math.IsNaN(s.value) || math.IsInf(s.value, 0) {
		p.stats.NonFinite++
		return
	}
	at := p.now
	if s.hasTime {
		at = s.time
	}
	if at == 0 {
		p.stats.Untimed++
		return
	}
	se := ingest.Series{Resource: -1, Source: p.in.Source}
	se.Name = p.t.Strings.Intern(s.name)
	se.Family = se.Name
	if f != nil {
		se.Type, se.Unit = f.typ, f.unit
		if famName != s.name || f.typ == ingest.MetricHistogram || f.typ == ingest.MetricSummary {
			se.Family = p.t.Strings.Intern(famName)
		}
		switch f.typ {
		case ingest.MetricCounter, ingest.MetricHistogram, ingest.MetricSummary:
			se.Temporality = ingest.TemporalityCumulative
		}
		if f.om == "gaugehistogram" {
			se.Temporality = ingest.TemporalityUnspecified
		}
	}
	p.labels = p.labels[:0]
	clear(p.seen)
	for _, l := range s.labels {
		if p.seen[l.name] {
			p.warn("duplicate-label", "label %q appears twice in %s; sample skipped", l.name, s.name)
			return
		}
		p.seen[l.name] = true
		v := l.value
		if l.name == "le" || l.name == "quantile" {
			v = canonicalFloat(v)
		}
		p.labels = append(p.labels, ingest.NewAttr(p.t.Strings.Intern(l.name), ingest.StringValue(p.t.Strings.Intern(v))))
	}
	for _, a := range p.extra {
		if !p.seen[p.t.Str(a.Key)] {
			p.labels = append(p.labels, a)
		}
	}
	se.Labels = p.labels
	id := p.series.ID(se)
	p.t.Samples = append(p.t.Samples, ingest.Sample{Time: at, Value: s.value, Metric: se.Name, Series: id, Device: -1, Instance: -1, Source: p.in.Source})
	p.stats.Samples++
}

// canonicalFloat writes a bucket bound or quantile so that "1", "1.0" and
// "1e0" are one label value.
func canonicalFloat(v string) string {
	f, err := parseValue(v)
	if err != nil {
		return v
	}
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return fmt.Sprintf("%q…", b[:80])
	}
	return fmt.Sprintf("%q", b)
}
