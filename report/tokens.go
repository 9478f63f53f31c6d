package report

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/attribution"
)

// The --tokens contract (docs/design.md §11): the identifying columns, the
// bucket columns of contract version 1 in bucket order, "estimated", then the
// columns added later in the order they were added (BucketInfo.Since).
// Columns may be added at the end, never renamed or moved; both lists are
// derived from the bucket table (attribution/tokens.go, ingest/category.go),
// so a new bucket or kernel category gets its column without a change here.
var tokenColumns, tokenBuckets, estimatedAt = func() ([]string, []tokenColumn, int) {
	cols := []string{"request_id", "tenant", "token_index", "emitted_at_ns", "interval_ns"}
	var buckets []tokenColumn
	add := func(b attribution.Bucket) {
		buckets = append(buckets, tokenColumn{b, len(cols)})
		cols = append(cols, b.Info().Column)
	}
	var later []attribution.Bucket
	for _, b := range attribution.Buckets() {
		if b.Info().Since <= 1 {
			add(b)
		} else {
			later = append(later, b)
		}
	}
	estimated := len(buckets)
	cols = append(cols, "estimated")
	slices.SortStableFunc(later, func(x, y attribution.Bucket) int { return cmp.Compare(x.Info().Since, y.Info().Since) })
	for _, b := range later {
		add(b)
	}
	return cols, buckets, estimated
}()

// tokenColumn is a bucket column of the --tokens output and its position;
// estimatedAt is the index in tokenBuckets before which "estimated" sits.
type tokenColumn struct {
	bucket attribution.Bucket
	col    int
}

// WriteTokens streams one row per output token: CSV with a header, or JSON
// Lines when jsonLines is set. Rows are written as the breakdowns are
// computed, so memory stays flat however many tokens there are.
func WriteTokens(w io.Writer, res *attribution.Result, jsonLines bool) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	if !jsonLines {
		bw.WriteString(strings.Join(tokenColumns, ",") + "\n")
	}
	var err error
	row := make([]byte, 0, 512)
	res.EachToken(func(tb *attribution.TokenBreakdown) {
		if err != nil {
			return
		}
		r := &res.Requests[tb.Request]
		row = row[:0]
		if jsonLines {
			row = append(row, `{"request_id":`...)
			row = appendJSONString(row, res.ID(r))
			row = append(row, `,"tenant":`...)
			row = appendJSONString(row, res.Tenant(r))
			row = append(row, `,"token_index":`...)
			row = strconv.AppendInt(row, int64(tb.Index), 10)
			row = append(row, `,"emitted_at_ns":`...)
			row = strconv.AppendInt(row, tb.EmittedAt, 10)
			row = append(row, `,"interval_ns":`...)
			row = strconv.AppendInt(row, tb.Interval, 10)
			for i := 0; i <= len(tokenBuckets); i++ {
				if i == estimatedAt {
					row = append(row, `,"estimated":`...)
					row = strconv.AppendBool(row, tb.Estimated)
				}
				if i == len(tokenBuckets) {
					break
				}
				c := tokenBuckets[i]
				row = append(row, `,"`...)
				row = append(row, tokenColumns[c.col]...)
				row = append(row, `":`...)
				row = strconv.AppendInt(row, tb.Buckets[c.bucket], 10)
			}
			row = append(row, "}\n"...)
		} else {
			row = appendCSV(row, res.ID(r))
			row = append(row, ',')
			row = appendCSV(row, res.Tenant(r))
			for _, v := range []int64{int64(tb.Index), tb.EmittedAt, tb.Interval} {
				row = append(row, ',')
				row = strconv.AppendInt(row, v, 10)
			}
			for i := 0; i <= len(tokenBuckets); i++ {
				if i == estimatedAt {
					row = append(row, ',')
					row = strconv.AppendBool(row, tb.Estimated)
				}
				if i == len(tokenBuckets) {
					break
				}
				row = append(row, ',')
				row = strconv.AppendInt(row, tb.Buckets[tokenBuckets[i].bucket], 10)
			}
			row = append(row, '\n')
		}
		_, err = bw.Write(row)
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// appendCSV quotes a field when it needs it (RFC 4180).
func appendCSV(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	return append(append(b, '"'), strings.ReplaceAll(s, `"`, `""`)+`"`...)
}

// tokensText renders the token section.
func tokensText(b *strings.Builder, st styles, ts *attribution.TokenSummary, cov *GPUCoverage) {
	head := fmt.Sprintf("%s tokens", commas(ts.Tokens))
	if ts.Estimated > 0 {
		head += fmt.Sprintf(", %s estimated", commas(ts.Estimated))
	}
	fmt.Fprintf(b, "\n%s  %s\n", st.section.Render("PER TOKEN"), st.dim.Render(head+"; share of each token's interval"))
	// Columns: buckets that hold any time.
	groups := append([]attribution.BucketShares{ts.First, ts.Decode}, ts.ByPosition[1:]...)
	var cols []int
	for i := range ts.Decode.Buckets {
		for _, g := range groups {
			if i < len(g.Buckets) && g.Buckets[i].Share >= 0.0005 {
				cols = append(cols, i)
				break
			}
		}
	}
	header := []string{"tokens", "n", "mean ms"}
	for _, c := range cols {
		header = append(header, shortBucket(ts.Decode.Buckets[c].Name))
	}
	t := newTable(header...)
	addRow := func(label string, g attribution.BucketShares) {
		row := []string{label, commas(g.Tokens), ms(g.MeanMs)}
		for _, c := range cols {
			row = append(row, pct(g.Buckets[c].Share))
		}
		t.row(row...)
	}
	addRow("first", ts.First)
	addRow("decode", ts.Decode)
	for _, g := range ts.ByPosition[1:] {
		if g.Tokens > 0 {
			addRow("  #"+g.Name, g)
		}
	}
	for _, g := range ts.ByTenant {
		addRow("  "+g.Name, g)
	}
	t.render(b, st, 2)
	if ts.GPUEstimate != "" {
		fmt.Fprintf(b, "  %s\n", st.warn.Render("estimated: "+ts.GPUEstimate))
	}
	for _, u := range ts.Unfilled {
		fmt.Fprintf(b, "  %s\n", st.dim.Render("not filled: "+u))
	}
	if cov != nil {
		fmt.Fprintf(b, "  %s\n", st.warn.Render(gpuCoverageText(cov)))
	}
}

// stallsText renders the stalls section: the decode tokens slower than their
// model's threshold, by cause, and the worst of them.
func stallsText(b *strings.Builder, st styles, s attribution.Stalls) {
	var thr []string
	for _, m := range sortedKeys(s.ThresholdMs) {
		thr = append(thr, fmt.Sprintf("%s > %s ms", m, ms(s.ThresholdMs[m])))
	}
	var causes []string
	for _, c := range sortedByCount(s.ByCause) {
		causes = append(causes, fmt.Sprintf("%s %s", bucketLabel(c), commas(s.ByCause[c])))
	}
	fmt.Fprintf(b, "\n%s  %s\n", st.section.Render("STALLS"),
		st.dim.Render(fmt.Sprintf("%s decode tokens (%s) over %s", commas(s.Count), pct(s.Share), strings.Join(thr, ", "))))
	fmt.Fprintf(b, "  by cause: %s\n", strings.Join(causes, ", "))
	for _, w := range s.Worst {
		who := fmt.Sprintf("%s token %d (%s)", w.Request, w.Token, w.Tenant)
		if w.Tokens > 1 {
			who = fmt.Sprintf("%d tokens (%s…)", w.Tokens, strings.Join(w.Requests, ", "))
		}
		where := ""
		switch {
		case w.Step >= 0:
			where = fmt.Sprintf("step %d (%s, batch %d): ", w.Step, w.StepPhase, w.StepBatch)
		case w.WindowMs > 0:
			where = fmt.Sprintf("%s window: ", fmtSeconds(w.WindowMs/1e3))
		}
		fmt.Fprintf(b, "  %s%s ms, %s +%s ms over typical — %s\n", where, ms(w.IntervalMs), bucketLabel(w.Cause), ms(w.ExcessMs), who)
	}
}

// shortBucket is a bucket's heading in the narrow per-token tables.
func shortBucket(name string) string {
	if name == attribution.BucketStepUnsplit.String() {
		return "no GPU data" // its short name, "step", reads as "the step is slow"
	}
	if short, ok := bucketShort[name]; ok {
		return short
	}
	return name
}

var bucketShort = func() map[string]string {
	m := map[string]string{}
	for _, b := range attribution.Buckets() {
		m[b.String()] = b.Info().Short
	}
	return m
}()

func sortedKeys(m map[string]float64) []string {
	return slices.Sorted(maps.Keys(m))
}

// sortedByCount orders keys by descending count, then by name.
func sortedByCount(m map[string]int) []string {
	out := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	return out
}
