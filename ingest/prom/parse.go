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
	// Budget bounds the samples and series kept (ingest.MetricLimits'
	// defaults when zero); past it, Parse stops with an error wrapping
	// ingest.ErrMetricBudget.
	Budget ingest.MetricBudget
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
	// Coalesced counts the samples that repeated their series' previous
	// one (same time and value) and were folded into it.
	Coalesced int
}

// family is what # TYPE and # UNIT declared for a metric family name.
type family struct {
	typ     ingest.MetricType
	om      string // the declared type word
	unit    ingest.StrID
	hasType bool
	// typeLine is the line of the # TYPE that declared it.
	typeLine int
	// warned holds the codes of the warnings already given about it: one
	// of each per family, however many scrapes repeat the problem.
	warned map[string]bool
}

// bucketRun is the previous _bucket sample of the histogram being read, to
// check that its buckets rise in le and are cumulative.
type bucketRun struct {
	key   string // family and labels other than le
	time  int64
	le    float64
	count float64
	set   bool
}

// parser holds the state of one stream.
type parser struct {
	t      *ingest.Trace
	in     ParseInput
	sink   *ingest.MetricSink
	err    error
	bucket bucketRun
	keyBuf []byte
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
	p := &parser{t: t, in: in, sink: ingest.NewMetricSink(t, in.Budget), fams: map[string]*family{}, now: in.ScrapeTime, seen: map[string]bool{}}
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
		if p.err != nil {
			p.stats.Series = len(t.Series) - seriesBefore
			return p.stats, fmt.Errorf("line %d: %w", p.line, p.err)
		}
		if err == io.EOF {
			break
		}
	}
	p.stats.Series = len(t.Series) - seriesBefore
	p.stats.Coalesced = int(p.sink.Coalesced)
	p.sink.WarnCoalesced(in.Source)
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
		if f.hasType && f.om != word {
			p.warnFamily(f, "type-mismatch", "# TYPE %s %s, but line %d declared it %s; series seen before keep %s", name, word, f.typeLine, f.om, f.om)
		}
		f.typ, f.om, f.hasType, f.typeLine = typ, word, true, p.line
	case "UNIT":
		p.stats.OpenMetrics = true
		if u := string(bytes.TrimSpace(rest)); u != "" {
			p.fam(name).unit = p.t.Strings.Intern(u)
		}
	}
}

// warnFamily warns about a family, once per code.
func (p *parser) warnFamily(f *family, code, format string, args ...any) {
	if f.warned[code] {
		return
	}
	if f.warned == nil {
		f.warned = map[string]bool{}
	}
	f.warned[code] = true
	p.warn(code, format, args...)
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
	if f != nil {
		p.checkShape(s, famName, f, at)
	}
	se.Labels = p.labels
	kept, err := p.sink.Add(se, ingest.Sample{Time: at, Value: s.value, Metric: se.Name, Device: -1, Instance: -1, Source: p.in.Source})
	if err != nil {
		p.err = err
		return
	}
	if kept {
		p.stats.Samples++
	}
}

// checkShape warns about a sample that does not fit its family's declared
// type: a histogram or summary sample without its suffix or label, a bucket
// bound that is not a number, buckets that do not rise in le or are not
// cumulative, a negative counter or count. The sample is kept as it is.
func (p *parser) checkShape(s *sampleLine, famName string, f *family, at int64) {
	suffix := s.name[len(famName):]
	switch f.typ {
	case ingest.MetricCounter:
		if s.value < 0 {
			p.warnFamily(f, "negative-count", "counter %s has a negative value %g: %s", famName, s.value, s.name)
		}
		return
	case ingest.MetricHistogram, ingest.MetricSummary:
	default:
		return
	}
	typ := f.om
	le, hasLe, hasQuantile := "", false, false
	for _, l := range s.labels {
		switch l.name {
		case "le":
			le, hasLe = l.value, true
		case "quantile":
			hasQuantile = true
		}
	}
	switch {
	case suffix == "" && f.typ == ingest.MetricHistogram:
		p.warnFamily(f, "type-mismatch", "%s is declared %s, but has a sample %s without _bucket, _count or _sum", famName, typ, s.name)
	case suffix == "" && !hasQuantile:
		p.warnFamily(f, "type-mismatch", "%s is declared %s, but has a sample %s without a quantile label", famName, typ, s.name)
	case suffix == "_count" && s.value < 0:
		p.warnFamily(f, "negative-count", "%s %s has a negative value %g", typ, s.name, s.value)
	case suffix == "_bucket" && f.typ == ingest.MetricHistogram:
		if !hasLe {
			p.warnFamily(f, "bad-histogram", "histogram %s has a bucket without an le label", famName)
			return
		}
		bound, err := parseValue(le)
		if err != nil {
			p.warnFamily(f, "bad-histogram", "histogram %s has a bucket le=%q that is not a number", famName, le)
			return
		}
		p.checkBucket(s, famName, f, at, bound)
	}
}

// checkBucket compares a bucket with the previous one of the same histogram
// (same family, other labels and time): its bound must be higher and its
// count no lower, since Prometheus buckets are cumulative.
func (p *parser) checkBucket(s *sampleLine, famName string, f *family, at int64, bound float64) {
	k := append(p.keyBuf[:0], famName...)
	for _, l := range s.labels {
		if l.name != "le" {
			k = append(k, 0)
			k = append(k, l.name...)
			k = append(k, 0)
			k = append(k, l.value...)
		}
	}
	p.keyBuf = k
	if s.value < 0 {
		p.warnFamily(f, "negative-count", "histogram %s: bucket le=%g has a negative count %g", famName, bound, s.value)
	}
	b := &p.bucket
	if b.set && b.time == at && b.key == string(k) {
		switch {
		case bound <= b.le:
			p.warnFamily(f, "bad-histogram", "histogram %s: bucket le=%g after le=%g; buckets must rise in le", famName, bound, b.le)
		case s.value < b.count:
			p.warnFamily(f, "bad-histogram", "histogram %s: bucket le=%g counts %g, less than le=%g's %g; buckets must be cumulative", famName, bound, s.value, b.le, b.count)
		}
	} else {
		b.key = string(k)
	}
	b.time, b.le, b.count, b.set = at, bound, s.value, true
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
