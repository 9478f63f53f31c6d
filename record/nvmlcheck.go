package record

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/llmprof/llmprof/internal/stat"
)

// NVMLCheck is what a capture says about its own NVML telemetry: how many
// samples per second each table holds, what one device poll cost, and
// whether NVML's own timestamps (ring-buffer samples, per-process
// utilization) track CLOCK_REALTIME, as CaptureDecoder assumes. It is what
// bench/record-gpu.sh checks on a GPU host.
type NVMLCheck struct {
	Capture  string  `json:"capture"`
	Status   string  `json:"status"`
	Seconds  float64 `json:"seconds"`
	GPUs     int     `json:"gpus"`
	NVML     string  `json:"nvml"`
	Device   Rate    `json:"device"`
	GPM      Rate    `json:"gpm"`
	Buffered []Rate  `json:"buffered"`
	Process  Rate    `json:"process"`
	// PollLatency is the time one device poll (every query of one GPU)
	// took, from the rows' poll_latency_ns.
	PollLatencyP50Ms float64 `json:"poll_latency_p50_ms"`
	PollLatencyP99Ms float64 `json:"poll_latency_p99_ms"`
	// Lag is recorder realtime at the drain minus the newest NVML
	// timestamp drained: small and positive if NVML stamps with
	// CLOCK_REALTIME µs.
	BufferedLag Lag   `json:"buffered_lag"`
	ProcessLag  Lag   `json:"process_lag"`
	Drops       int64 `json:"drops"`
	Overruns    int64 `json:"overruns"`
	// Problems lists the checks that failed: no telemetry, device rows
	// below 80% of the configured rate, NVML timestamps that are not
	// realtime.
	Problems []string `json:"problems"`
}

// Rate counts rows of one table (or one sampling type).
type Rate struct {
	Name      string  `json:"name"`
	Rows      int     `json:"rows"`
	PerSecond float64 `json:"per_second"`
	// PerGPUPerSecond divides by the number of GPUs.
	PerGPUPerSecond float64 `json:"per_gpu_per_second"`
}

// Lag summarizes realtime − NVML timestamp, in milliseconds.
type Lag struct {
	N     int     `json:"n"`
	MinMs float64 `json:"min_ms"`
	P50Ms float64 `json:"p50_ms"`
	MaxMs float64 `json:"max_ms"`
}

// CheckNVML reads a capture's NVML tables and checks them.
func CheckNVML(c *Capture) (*NVMLCheck, error) {
	m := c.Manifest
	rep := &NVMLCheck{Capture: c.Dir, Status: m.Status, GPUs: len(m.GPUs), Drops: m.Drops.ChannelFull, Overruns: m.Drops.SamplerOverruns}
	if m.Clock.Start != nil && m.Clock.End != nil {
		rep.Seconds = float64(m.Clock.End.RealtimeNs-m.Clock.Start.RealtimeNs) / 1e9
	}
	if !m.NVML.Available {
		rep.NVML = "unavailable"
		rep.Problems = append(rep.Problems, "no NVML telemetry in the capture: "+m.NVML.Reason)
		return rep, nil
	}
	rep.NVML = fmt.Sprintf("driver %s, NVML %s", m.NVML.DriverVersion, m.NVML.NVMLVersion)

	toReal, err := monoToReal(c)
	if err != nil {
		return nil, err
	}
	rate := func(name string, n int) Rate {
		r := Rate{Name: name, Rows: n}
		if rep.Seconds > 0 {
			r.PerSecond = float64(n) / rep.Seconds
			r.PerGPUPerSecond = r.PerSecond / float64(max(rep.GPUs, 1))
		}
		return r
	}

	var latencies []float64
	n := 0
	if _, err := ReadTable(c, func(d *DeviceSample) error {
		if d.MIGUUID == nil {
			n++
			latencies = append(latencies, float64(d.PollLatencyNs)/1e6)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	rep.Device = rate("gpu_device (whole GPUs)", n)
	slices.Sort(latencies)
	rep.PollLatencyP50Ms, rep.PollLatencyP99Ms = stat.Quantile(latencies, 0.5), stat.Quantile(latencies, 0.99)
	if want := 1000 / float64(max(m.Sampling.DeviceIntervalMs, 1)); rep.Device.PerGPUPerSecond < 0.8*want {
		rep.Problems = append(rep.Problems, fmt.Sprintf("device rows: %.1f/s per GPU, configured %.1f/s", rep.Device.PerGPUPerSecond, want))
	}

	n = 0
	if _, err := ReadTable(c, func(*GPMSample) error { n++; return nil }); err != nil {
		return nil, err
	}
	rep.GPM = rate("gpu_gpm (metric values)", n)

	byType := map[uint8]int{}
	newest := map[int64]uint64{} // per drain (t_mono_ns): newest NVML timestamp
	if _, err := ReadTable(c, func(b *BufferedSample) error {
		byType[b.SamplingType]++
		newest[b.MonoNs] = max(newest[b.MonoNs], b.NVMLTimestampUs)
		return nil
	}); err != nil {
		return nil, err
	}
	types := make([]int, 0, len(byType))
	for t := range byType {
		types = append(types, int(t))
	}
	sort.Ints(types)
	for _, t := range types {
		rep.Buffered = append(rep.Buffered, rate(fmt.Sprintf("gpu_buffered type %d", t), byType[uint8(t)]))
	}
	rep.BufferedLag = lags(newest, toReal)

	n = 0
	newestProc := map[int64]uint64{}
	if _, err := ReadTable(c, func(p *ProcessSample) error {
		n++
		if p.NVMLTimestampUs != nil {
			newestProc[p.MonoNs] = max(newestProc[p.MonoNs], *p.NVMLTimestampUs)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	rep.Process = rate("gpu_process", n)
	rep.ProcessLag = lags(newestProc, toReal)

	// NVML keeps its sample buffers for a few seconds; a drain every
	// second should find samples newer than a few seconds and never from
	// the future. A clock other than realtime shows up as a lag of hours
	// or years.
	drain := float64(max(m.Sampling.DrainIntervalMs, 1000))
	for _, l := range []struct {
		name string
		lag  Lag
	}{{"ring-buffer samples", rep.BufferedLag}, {"process utilization", rep.ProcessLag}} {
		if l.lag.N > 0 && (l.lag.MinMs < -5 || l.lag.P50Ms > drain+5000) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: realtime − NVML timestamp is %.1f…%.1f ms (p50 %.1f): not CLOCK_REALTIME µs?",
				l.name, l.lag.MinMs, l.lag.MaxMs, l.lag.P50Ms))
		}
	}
	return rep, nil
}

// monoToReal maps CLOCK_MONOTONIC to CLOCK_REALTIME with the capture's
// clock pairs: the offset of the nearest pair at or before the instant
// (drift between pairs ten seconds apart is far below a millisecond).
func monoToReal(c *Capture) (func(int64) int64, error) {
	var pairs []ClockPair
	if _, err := ReadTable(c, func(p *ClockPair) error { pairs = append(pairs, *p); return nil }); err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%s: no clock pairs", c.Dir)
	}
	slices.SortFunc(pairs, func(a, b ClockPair) int { return cmp.Compare(a.MonoNs, b.MonoNs) })
	return func(mono int64) int64 {
		i := sort.Search(len(pairs), func(i int) bool { return pairs[i].MonoNs > mono })
		p := pairs[max(i-1, 0)]
		return p.RealMidNs() + (mono - p.MonoNs)
	}, nil
}

func lags(newest map[int64]uint64, toReal func(int64) int64) Lag {
	var ms []float64
	for mono, ts := range newest {
		ms = append(ms, float64(toReal(mono)-int64(ts)*1000)/1e6)
	}
	if len(ms) == 0 {
		return Lag{}
	}
	sort.Float64s(ms)
	return Lag{N: len(ms), MinMs: ms[0], P50Ms: stat.Quantile(ms, 0.5), MaxMs: ms[len(ms)-1]}
}
