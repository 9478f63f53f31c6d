package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmprof/llmprof/attribution"
)

// gpuText renders the GPU section: busy and idle per device with the idle
// time's causes, time per kernel category, the top kernels, the longest idle
// gaps and memory use.
func gpuText(b *strings.Builder, st styles, g *attribution.GPU, width int) {
	fmt.Fprintf(b, "\n%s\n", st.section.Render("GPU"))
	t := newTable("device", "ops", "window", "busy", "idle: no work", "waiting on CPU", "unknown")
	for _, d := range g.Devices {
		name := fmt.Sprintf("%d", d.Device)
		if d.Name != "" {
			name += " " + d.Name
		}
		idle := func(v float64) string {
			if d.WindowMs == 0 {
				return "—"
			}
			return pct(v / d.WindowMs)
		}
		t.row(name, commas(d.Ops), fmtSeconds(d.WindowMs/1e3), pct(d.Utilization), idle(d.IdleNoWorkMs), idle(d.IdleWaitingCPUMs), idle(d.IdleUnknownMs))
	}
	t.render(b, st, 2)
	if len(g.KernelCategories) > 0 {
		fmt.Fprintf(b, "  %s\n", st.dim.Render("GPU time by kernel category"))
		barWidth := max(10, min(30, width-50))
		for _, c := range g.KernelCategories {
			if c.TotalMs == 0 {
				continue
			}
			filled := int(math.Round(c.Share * float64(barWidth)))
			fmt.Fprintf(b, "  %-16s %6s  %s%s  %s\n", c.Name, pct(c.Share),
				st.bar.Render(strings.Repeat("█", filled)), st.barEmpty.Render(strings.Repeat("░", barWidth-filled)), fmtSeconds(c.TotalMs/1e3))
		}
	}
	if len(g.TopKernels) > 0 {
		k := newTable("top kernels", "category", "count", "total", "avg µs", "share")
		for _, kt := range g.TopKernels {
			name := kt.Name
			if st.width == 0 {
				name = shorten(name, 60) // no width to fit: a fixed cut
			}
			k.row(name, kt.Category, commas(kt.Count), fmtSeconds(kt.TotalMs/1e3), fmtFloat(kt.AvgUs, 1), pct(kt.Share))
		}
		k.render(b, st, 2)
	}
	if n := len(g.IdleGaps); n > 0 {
		fmt.Fprintf(b, "  %s\n", st.dim.Render("longest idle gaps"))
		for i, gap := range g.IdleGaps {
			if i == 5 {
				fmt.Fprintf(b, "  %s\n", st.dim.Render(fmt.Sprintf("… %d more (see --format json)", n-5)))
				break
			}
			why := strings.ReplaceAll(gap.Cause.String(), "_", " ")
			if gap.API != "" {
				why += " (" + gap.API + ")"
			}
			fmt.Fprintf(b, "    device %d: %s ms, %s, before %s\n", gap.Device, ms(gap.DurationMs), why, shorten(gap.NextOp, 50))
		}
	}
	for _, m := range g.Memory {
		fmt.Fprintf(b, "  memory, device %d: peak %s MiB, %d allocations, fragmentation %s at peak (max %s)\n",
			m.Device, fmtFloat(float64(m.PeakBytes)/(1<<20), 1), m.Allocs, pct(m.FragmentationAtPeak), pct(m.MaxFragmentation))
	}
}

// shorten cuts a long (demangled) name to n runes with an ellipsis.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
