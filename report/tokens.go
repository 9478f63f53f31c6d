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

// tokenColumns is the --tokens contract (DESIGN §11), in order; columns may
// be added at the end, never renamed.
var tokenColumns = []string{
	"request_id", "tenant", "token_index", "emitted_at_ns", "interval_ns",
	"queue_ns", "preempted_ns", "cpu_schedule_ns",
	"gpu_gemm_ns", "gpu_attention_ns", "gpu_communication_ns", "gpu_norm_activation_ns",
	"gpu_sampling_ns", "gpu_memcpy_ns", "gpu_other_ns", "gpu_idle_ns",
	"cpu_postprocess_ns", "other_ns", "estimated",
	"step_unsplit_ns",
}

// tokenBuckets maps the bucket columns (from queue_ns on) to buckets.
var tokenBuckets = []attribution.Bucket{
	attribution.BucketQueue, attribution.BucketPreempted, attribution.BucketCPUSchedule,
	attribution.BucketGPUGEMM, attribution.BucketGPUAttention, attribution.BucketGPUCommunication,
	attribution.BucketGPUNormActivation, attribution.BucketGPUSampling, attribution.BucketGPUMemcpy,
	attribution.BucketGPUOther, attribution.BucketGPUIdle, attribution.BucketCPUPostprocess, attribution.BucketOther,
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
			row = appendJSONString(row, r.ID)
			row = append(row, `,"tenant":`...)
			row = appendJSONString(row, r.Tenant)
			row = append(row, `,"token_index":`...)
			row = strconv.AppendInt(row, int64(tb.Index), 10)
			row = append(row, `,"emitted_at_ns":`...)
			row = strconv.AppendInt(row, tb.EmittedAt, 10)
			row = append(row, `,"interval_ns":`...)
			row = strconv.AppendInt(row, tb.Interval, 10)
			for i, b := range tokenBuckets {
				row = append(row, `,"`...)
				row = append(row, tokenColumns[5+i]...)
				row = append(row, `":`...)
				row = strconv.AppendInt(row, tb.Buckets[b], 10)
			}
			row = append(row, `,"estimated":`...)
			row = strconv.AppendBool(row, tb.Estimated)
			row = append(row, `,"step_unsplit_ns":`...)
			row = strconv.AppendInt(row, tb.Buckets[attribution.BucketStepUnsplit], 10)
			row = append(row, "}\n"...)
		} else {
			row = appendCSV(row, r.ID)
			row = append(row, ',')
			row = appendCSV(row, r.Tenant)
			for _, v := range []int64{int64(tb.Index), tb.EmittedAt, tb.Interval} {
				row = append(row, ',')
				row = strconv.AppendInt(row, v, 10)
			}
			for _, b := range tokenBuckets {
				row = append(row, ',')
				row = strconv.AppendInt(row, tb.Buckets[b], 10)
			}
			row = append(row, ',')
			row = strconv.AppendBool(row, tb.Estimated)
			row = append(row, ',')
			row = strconv.AppendInt(row, tb.Buckets[attribution.BucketStepUnsplit], 10)
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
func tokensText(b *strings.Builder, st styles, ts *attribution.TokenSummary) {
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
	s := ts.Stalls
	if s.Count == 0 {
		return
	}
	var thr []string
	for _, m := range sortedKeys(s.ThresholdMs) {
		thr = append(thr, fmt.Sprintf("%s > %s ms", m, ms(s.ThresholdMs[m])))
	}
	var causes []string
	for _, c := range sortedByCount(s.ByCause) {
		causes = append(causes, fmt.Sprintf("%s %s", c, commas(s.ByCause[c])))
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
		fmt.Fprintf(b, "  %s%s ms, %s +%s ms over typical — %s\n", where, ms(w.IntervalMs), w.Cause, ms(w.ExcessMs), who)
	}
}

func shortBucket(name string) string {
	name = strings.TrimPrefix(name, "gpu.")
	switch name {
	case "norm_activation":
		return "norm/act"
	case "communication":
		return "comm"
	case "cpu.schedule":
		return "sched"
	case "cpu.postprocess":
		return "post"
	case "step_unsplit":
		return "step"
	case "attention":
		return "attn"
	}
	return name
}

func sortedKeys(m map[string]float64) []string {
	return slices.Sorted(maps.Keys(m))
}

// sortedByCount orders keys by descending count, then by name.
func sortedByCount(m map[string]int) []string {
	out := slices.Sorted(maps.Keys(m))
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	return out
}
