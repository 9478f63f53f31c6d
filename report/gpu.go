package report

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/attribution"
)

// gpuText renders the GPU section: busy and idle per device with the idle
// time's causes, time per kernel category, the top kernels, the longest idle
// gaps and memory use.
func gpuText(b *strings.Builder, st styles, g *attribution.GPU, width int) {
	fmt.Fprintf(b, "\n%s\n", st.section.Render("GPU"))
	if len(g.Hosts) > 1 {
		fmt.Fprintf(b, "  %s\n", st.warn.Render(fmt.Sprintf("%d hosts (or captures that cannot be aligned): devices, windows and idle gaps are per host, never merged", len(g.Hosts))))
		for _, h := range g.Hosts {
			files := make([]string, len(h.Sources))
			for i, p := range h.Sources {
				files[i] = filepath.Base(p)
			}
			joined := ""
			if !h.Joined {
				joined = ", not aligned to the reference clock"
			}
			fmt.Fprintf(b, "  %s: %s%s\n", h.Name, strings.Join(files, ", "), joined)
		}
	}
	t := newTable("device", "ops", "window", "busy", "idle: no work", "waiting on CPU", "unknown")
	for _, d := range g.Devices {
		name := fmt.Sprintf("%d", d.Device)
		if d.Host != "" {
			name = d.Host + " / " + name
		}
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
		fmt.Fprintf(b, "  %s\n", st.dim.Render(uncategorizedLine(g.Uncategorized, 60)))
	}
	if len(g.TopKernels) > 0 {
		k := newTable("top kernels", "category", "count", "total", "avg µs", "share")
		names := make([]string, len(g.TopKernels))
		for i, kt := range g.TopKernels {
			names[i] = kt.Name
		}
		if st.width == 0 {
			names = shortenAll(names, 60, shorten) // no width to fit: a fixed cut
		}
		for i, kt := range g.TopKernels {
			k.row(names[i], kt.Category, commas(kt.Count), fmtSeconds(kt.TotalMs/1e3), fmtFloat(kt.AvgUs, 1), pct(kt.Share))
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
			dev := fmt.Sprintf("device %d", gap.Device)
			if gap.Host != "" {
				dev = gap.Host + " / " + dev
			}
			fmt.Fprintf(b, "    %s: %s ms, %s, before %s\n", dev, ms(gap.DurationMs), why, shorten(gap.NextOp, 50))
		}
	}
	for _, m := range g.Memory {
		dev := fmt.Sprintf("device %d", m.Device)
		if m.Host != "" {
			dev = m.Host + " / " + dev
		}
		fmt.Fprintf(b, "  memory, %s: peak %s MiB, %d allocations, fragmentation %s at peak (max %s)\n",
			dev, fmtFloat(float64(m.PeakBytes)/(1<<20), 1), m.Allocs, pct(m.FragmentationAtPeak), pct(m.MaxFragmentation))
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

// uncategorizedLine says how much GPU time the kernel taxonomy left in
// other and which names hold it (each cut to cut runes, 0: whole).
func uncategorizedLine(u attribution.Uncategorized, cut int) string {
	line := "uncategorized (other): " + pct(u.Share) + " of GPU time"
	if len(u.Top) == 0 {
		return line
	}
	var names []string
	for _, k := range u.Top {
		name := k.Name
		if cut > 0 {
			name = shorten(name, cut)
		}
		names = append(names, name+" "+pct(k.Share))
	}
	return line + "; most in " + strings.Join(names, ", ")

}

// shortenAll cuts every name to n runes with cut, keeping different names
// different: names that would print alike (two cuDNN kernels that differ
// past the cut) show their common start, an ellipsis and the part from where
// they differ; if that is not enough, their ends (elideMiddle); failing
// that, a number.
func shortenAll(names []string, n int, cut func(string, int) string) []string {
	out := make([]string, len(names))
	for i, s := range names {
		out[i] = cut(s, n)
	}
	for _, try := range []func(i int, group []int) string{
		func(i int, group []int) string {
			cp := commonPrefix(names, group)
			r := []rune(names[i])
			head := min(cp, max(4, n/3))
			from := max(head, cp-4)
			return shorten(string(r[:head])+"…"+string(r[from:]), n)
		},
		func(i int, _ []int) string { return elideMiddle(names[i], n) },
		func(i int, group []int) string {
			k := slices.Index(group, i) + 1
			suffix := fmt.Sprintf(" #%d", k)
			return shorten(out[i], max(1, n-len(suffix))) + suffix
		},
	} {
		collided := false
		for _, group := range collisions(names, out) {
			collided = true
			for _, i := range group {
				out[i] = try(i, group)
			}
		}
		if !collided {
			break
		}
	}
	return out
}

// collisions groups the indices of different names whose short forms are
// equal.
func collisions(names, short []string) [][]int {
	by := map[string][]int{}
	var order []string
	for i, s := range short {
		if len(by[s]) == 0 {
			order = append(order, s)
		}
		by[s] = append(by[s], i)
	}
	var out [][]int
	for _, s := range order {
		g := by[s]
		for _, i := range g[1:] {
			if names[i] != names[g[0]] {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// commonPrefix is the number of runes the names at idx share at the start.
func commonPrefix(names []string, idx []int) int {
	first := []rune(names[idx[0]])
	n := len(first)
	for _, i := range idx[1:] {
		r := []rune(names[i])
		k := 0
		for k < min(n, len(r)) && r[k] == first[k] {
			k++
		}
		n = k
	}
	return n
}
