package report

import (
	"bufio"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/attribution"
)

// RequestRow is one request as the per-request table (`analyze --requests`)
// and the HTML report's charts show it. Times are ms; a metric the input
// cannot tell is NaN, a count it cannot tell −1.
type RequestRow struct {
	ID     string
	Tenant string
	Model  string
	// ArrivalNs is the arrival on the reference clock (Unix ns when the
	// reference is a wall clock); OffsetMs is the arrival since the run's
	// first one.
	ArrivalNs int64
	OffsetMs  float64
	TTFT      float64
	TPOT      float64
	E2E       float64
	Queue     float64
	// StagesMs has one value per attribution.StageNames(), summing to E2E.
	StagesMs     [attribution.NumStages]float64
	InputTokens  int
	OutputTokens int
	// CachedTokens is −1 when the input does not report the prefix cache;
	// KVHit is then meaningless (KVKnown false).
	KVKnown      bool
	KVHit        bool
	CachedTokens int
	Finish       string
}

// RequestRows lists the requests in arrival order.
func RequestRows(res *attribution.Result) []RequestRow {
	if res == nil || len(res.Requests) == 0 {
		return nil
	}
	order := make([]int, len(res.Requests))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := res.Requests[a].Arrival, res.Requests[b].Arrival
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	first := res.Requests[order[0]].Arrival
	rows := make([]RequestRow, len(order))
	for i, ri := range order {
		r := &res.Requests[ri]
		row := RequestRow{
			ID: res.ID(r), Tenant: res.Tenant(r), Model: res.Model(r),
			ArrivalNs: r.Arrival, OffsetMs: float64(r.Arrival-first) / 1e6,
			TTFT: nsToMs(r.TTFT), TPOT: nsToMs(r.TPOT), E2E: nsToMs(r.E2E), Queue: nsToMs(r.Queue),
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
			KVKnown: r.CacheKnown, KVHit: r.CacheHit, CachedTokens: r.CachedTokens, Finish: res.Finish(r),
		}
		if !r.CacheKnown {
			row.CachedTokens = -1
		}
		for s, v := range r.Stages {
			row.StagesMs[s] = float64(v) / 1e6
		}
		rows[i] = row
	}
	return rows
}

func nsToMs(v float64) float64 {
	if math.IsNaN(v) {
		return v
	}
	return v / 1e6
}

// RequestColumns are the columns of `analyze --requests` in CSV and JSON
// Lines, in order (the Parquet table adds arrival as a timestamp and the
// partition columns; docs/fleet.md). Columns may be added at the end, never
// renamed.
func RequestColumns() []string {
	cols := []string{"request_id", "tenant", "model", "arrival_ns", "offset_ms", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms"}
	for _, s := range attribution.StageNames() {
		cols = append(cols, "stage_"+s+"_ms")
	}
	return append(cols, "input_tokens", "output_tokens", "cached_tokens", "kv_hit", "finish")
}

// WriteRequests writes one row per request: CSV with a header, or JSON Lines
// when jsonLines is set. An unknown value is an empty CSV field or a JSON
// null.
func WriteRequests(w io.Writer, rows []RequestRow, jsonLines bool) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	cols := RequestColumns()
	if !jsonLines {
		bw.WriteString(strings.Join(cols, ",") + "\n")
	}
	line := make([]byte, 0, 512)
	for i := range rows {
		r := &rows[i]
		vals := make([]string, 0, len(cols))
		quoted := make([]bool, 0, len(cols))
		add := func(v string, isString bool) {
			vals = append(vals, v)
			quoted = append(quoted, isString)
		}
		f := func(v float64) string {
			if math.IsNaN(v) {
				return ""
			}
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		n := func(v int) string {
			if v < 0 {
				return ""
			}
			return strconv.Itoa(v)
		}
		add(r.ID, true)
		add(r.Tenant, true)
		add(r.Model, true)
		add(strconv.FormatInt(r.ArrivalNs, 10), false)
		for _, v := range []float64{r.OffsetMs, r.TTFT, r.TPOT, r.E2E, r.Queue} {
			add(f(v), false)
		}
		for _, v := range r.StagesMs {
			add(f(v), false)
		}
		add(n(r.InputTokens), false)
		add(n(r.OutputTokens), false)
		add(n(r.CachedTokens), false)
		hit := ""
		if r.KVKnown {
			hit = strconv.FormatBool(r.KVHit)
		}
		add(hit, false)
		add(r.Finish, true)

		line = line[:0]
		if jsonLines {
			line = append(line, '{')
			for j, v := range vals {
				if j > 0 {
					line = append(line, ',')
				}
				line = appendJSONString(line, cols[j])
				line = append(line, ':')
				switch {
				case quoted[j] && (v != "" || cols[j] != "finish"):
					line = appendJSONString(line, v)
				case v == "":
					line = append(line, "null"...)
				default:
					line = append(line, v...)
				}
			}
			line = append(line, "}\n"...)
		} else {
			for j, v := range vals {
				if j > 0 {
					line = append(line, ',')
				}
				line = appendCSV(line, v)
			}
			line = append(line, '\n')
		}
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}
