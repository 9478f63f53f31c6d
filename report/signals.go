package report

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/llmprof/llmprof/signals"
)

// infrastructureText renders the INFRASTRUCTURE section: the latency spikes
// and, for each, the signals that deviated with it (signals/doc.go says how).
func infrastructureText(b *strings.Builder, st styles, res *signals.Result) {
	if res == nil {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("\n%s  %s\n", st.section.Render("INFRASTRUCTURE"),
		st.dim.Render(fmt.Sprintf("%s metric series (%s catalogued: %s), %s windows",
			commas(res.Series), commas(res.Catalogued), layerCounts(res.Layers), time.Duration(res.Window))))
	if res.Overlapping == 0 {
		p("  no overlap: no metric sample lies within the requests' window (%s–%s); the samples run %s–%s, so nothing was scored\n",
			dateTime(res.Start), dateTime(res.End), dateTime(res.SamplesFrom), dateTime(res.SamplesTo))
		return
	}
	if len(res.Spikes) == 0 {
		p("  no latency spike: no window's TTFT, ITL or E2E p99 departed from its baseline\n")
		return
	}
	for _, sp := range res.Spikes {
		d := sp.Latency[0]
		who := "all tenants"
		if d.Tenant != "" {
			who = "tenant " + d.Tenant
		}
		p("  %s–%s  %s p99 %s ms vs %s ms baseline (z %s, %s)", clockTime(sp.From), clockTime(sp.To),
			strings.ToUpper(d.Metric), fmtFloat(d.P99, 0), fmtFloat(d.Baseline, 0), fmtFloat(d.Z, 1), who)
		if len(sp.Latency) > 1 {
			p("%s", st.dim.Render(fmt.Sprintf(" +%d more", len(sp.Latency)-1)))
		}
		p("\n")
		if len(sp.Signals) == 0 {
			if len(sp.Load) > 0 {
				p("    %s\n", st.dim.Render("rose with load: no mechanism signal deviated; "+signalList(sp.Load)))
			} else {
				p("    %s\n", st.dim.Render(fmt.Sprintf("no signal deviated (%d tested)", sp.Tested)))
			}
			continue
		}
		for i, dv := range sp.Signals {
			p("    %d. %s %s  %s → %s %s (z %s, q %s, %s)\n", i+1, st.header.Render("["+string(dv.Layer)+"]"), dv.Short,
				fmtSig(dv.Baseline), fmtSig(dv.Value), dv.Unit, fmtFloat(dv.Z, 1), fmtQ(dv.Q), lagText(dv.Lag))
			if dv.Mechanism != "" && i == 0 {
				p("       %s\n", st.dim.Render("deviated together with the latency; plausible mechanism: "+dv.Mechanism))
			}
		}
		if len(sp.Load) > 0 {
			p("    %s\n", st.dim.Render("moved with load too: "+signalList(sp.Load)))
		}
	}
}

func layerCounts(m map[signals.Layer]int) string {
	var parts []string
	for _, l := range []signals.Layer{signals.LayerService, signals.LayerRuntime, signals.LayerInfrastructure, signals.LayerUnknown} {
		if m[l] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", l, m[l]))
		}
	}
	return strings.Join(parts, ", ")
}

func signalList(ds []signals.Deviation) string {
	var names []string
	for _, d := range ds {
		names = append(names, d.Name)
	}
	return strings.Join(names, ", ")
}

func dateTime(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05") }

func clockTime(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05") }

func lagText(lag int64) string {
	switch {
	case lag > 0:
		return time.Duration(lag).String() + " before"
	case lag < 0:
		return time.Duration(-lag).String() + " after"
	}
	return "coincident"
}

// fmtSig prints a signal value with three significant digits.
func fmtSig(v float64) string {
	if v == 0 || math.IsNaN(v) {
		return fmtFloat(v, 0)
	}
	return fmt.Sprintf("%.3g", v)
}

func fmtQ(q float64) string {
	if q < 1e-4 {
		return "<1e-4"
	}
	return fmt.Sprintf("%.2g", q)
}
