package synth

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/outfile"
)

// EpisodeKind is a kind of injected infrastructure fault.
type EpisodeKind uint8

const (
	// EpisodePFCStorm: a NIC receives a storm of priority-flow-control pause
	// frames on the RoCE priority (3), so the model's communication kernels
	// (all-reduce) take Factor times longer (default 30).
	EpisodePFCStorm EpisodeKind = iota
	// EpisodeKVPressure: the model's KV cache shrinks to Factor of its
	// capacity (default 0.15; another tenant's blocks, a leak), so usage sits at
	// 100% and the scheduler preempts.
	EpisodeKVPressure
	// EpisodeThrottle: the model's GPU runs at 1/Factor of its SM clock
	// (default 1.8; power capping), so every kernel takes Factor times longer.
	EpisodeThrottle
)

var episodeNames = [...]string{"pfc-pause-storm", "kv-cache-pressure", "gpu-clock-throttle"}

func (k EpisodeKind) String() string {
	if int(k) < len(episodeNames) {
		return episodeNames[k]
	}
	return "episode(" + strconv.Itoa(int(k)) + ")"
}

// Episode is one injected fault on the engine of Model, over [From, To)
// (Unix ns on the reference clock).
type Episode struct {
	Kind     EpisodeKind
	Model    string
	From, To int64
	Factor   float64
}

func (ep *Episode) factor() float64 {
	if ep.Factor > 0 {
		return ep.Factor
	}
	switch ep.Kind {
	case EpisodePFCStorm:
		return 30
	case EpisodeKVPressure:
		return 0.15
	}
	return 1.8
}

func (r *Run) activeEpisode(e int, kind EpisodeKind, t int64) *Episode {
	for i := range r.Config.Episodes {
		ep := &r.Config.Episodes[i]
		if ep.Kind == kind && ep.Model == r.Engines[e].Model && t >= ep.From && t < ep.To {
			return ep
		}
	}
	return nil
}

// episodeSlowdown is how much longer a kernel of engine e and category cat
// starting at t takes because of an episode.
func (r *Run) episodeSlowdown(e int, cat ingest.KernelCategory, t int64) float64 {
	f := 1.0
	if ep := r.activeEpisode(e, EpisodeThrottle, t); ep != nil {
		f *= ep.factor()
	}
	if cat == ingest.CategoryCommunication {
		if ep := r.activeEpisode(e, EpisodePFCStorm, t); ep != nil {
			f *= ep.factor()
		}
	}
	return f
}

// kvCapacity is engine e's KV-cache capacity in tokens at t.
func (r *Run) kvCapacity(e int, t int64) int {
	kv := r.Config.Models[e].KVTokens
	if ep := r.activeEpisode(e, EpisodeKVPressure, t); ep != nil {
		kv = max(int(float64(kv)*ep.factor()), 1)
	}
	return kv
}

// EpisodeTruth is what an episode should be found as: its window, and the
// metrics (sample names as the exporters expose them) any of which is the
// right first-ranked signal.
type EpisodeTruth struct {
	Kind     EpisodeKind `json:"kind"`
	Model    string      `json:"model"`
	From     int64       `json:"from_ns"`
	To       int64       `json:"to_ns"`
	Signals  []string    `json:"signals"`
	Exporter string      `json:"exporter"`
	// Arrivals counts the requests of the model that arrived during the
	// episode: latency windows are keyed by arrival (TTFT, E2E) and token
	// time (ITL), and an episode nothing arrived in shows only in ITL.
	Arrivals int `json:"arrivals"`
}

// EpisodeTruths lists the injected episodes with their expected signals.
func (r *Run) EpisodeTruths() []EpisodeTruth {
	var out []EpisodeTruth
	for _, ep := range r.Config.Episodes {
		tr := EpisodeTruth{Kind: ep.Kind, Model: ep.Model, From: ep.From, To: ep.To}
		model := map[string]string{}
		for _, t := range r.Config.Tenants {
			model[t.Name] = t.Model
		}
		for i := range r.Requests {
			q := &r.Requests[i]
			if model[q.Tenant] == ep.Model && q.Arrival >= ep.From && q.Arrival < ep.To {
				tr.Arrivals++
			}
		}
		switch ep.Kind {
		case EpisodePFCStorm:
			tr.Exporter = "node_exporter"
			tr.Signals = []string{"node_ethtool_received_prio3_pause", "node_ethtool_received_prio3_pause_duration"}
		case EpisodeKVPressure:
			tr.Exporter = "vllm"
			tr.Signals = []string{"vllm:kv_cache_usage_perc", "vllm:num_preemptions_total"}
		case EpisodeThrottle:
			tr.Exporter = "dcgm-exporter"
			tr.Signals = []string{"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_POWER_VIOLATION"}
		}
		out = append(out, tr)
	}
	return out
}

// EpisodesConfig is DefaultConfig with one episode of each kind, 8 s long,
// spread over a run of length d (at least 60 s): KV pressure and clock
// throttling on the first model, a pause storm on the second (tensor-parallel,
// so it has all-reduce kernels).
func EpisodesConfig(seed int64, d time.Duration) Config {
	cfg := DefaultConfig(seed, d)
	cfg.AddEpisodes()
	return cfg
}

// AddEpisodes gives a config built on DefaultConfig (DemoConfig too)
// EpisodesConfig's episodes over its Duration, with the room in the first two
// models' KV caches they need; its other models and tenants stay as they are.
func (c *Config) AddEpisodes() {
	at := func(f float64) int64 { return c.Start + int64(f*float64(c.Duration)) }
	const dur = 8e9
	// Room in the KV caches, so that a full cache is an episode, not what
	// every burst of the bursty tenant does.
	c.Models[0].KVTokens = 40_000
	c.Models[1].KVTokens = 250_000
	c.Episodes = []Episode{
		{Kind: EpisodePFCStorm, Model: c.Models[1].Name, From: at(0.2), To: at(0.2) + dur},
		{Kind: EpisodeKVPressure, Model: c.Models[0].Name, From: at(0.5), To: at(0.5) + dur},
		{Kind: EpisodeThrottle, Model: c.Models[0].Name, From: at(0.78), To: at(0.78) + dur},
	}
}

// MetricFiles are the scrape files WriteMetrics writes, one per exporter.
var MetricFiles = []string{"vllm.prom", "dcgm-exporter.prom", "node-exporter.prom"}

// WriteMetrics writes what Prometheus would have scraped every interval
// (default 1 s) over the run from vLLM's /metrics, NVIDIA dcgm-exporter and
// node_exporter (with --collector.ethtool and the infiniband collector), one
// file per exporter in dir: each scrape is Prometheus text 0.0.4 under a
// "# llmprof-scrape <unix ns>" line (ingest/prom reads it). Names, label sets
// and types are the exporters' own (docs/signals.md); the values follow the
// run — running and waiting requests, KV-cache usage and preemptions, GPU
// busy time — plus noise, and the injected Episodes.
func (r *Run) WriteMetrics(dir string, interval time.Duration) ([]string, error) {
	if interval <= 0 {
		interval = time.Second
	}
	step := int64(interval)
	from := r.Config.Start - 10*step
	var times []int64
	for t := from; t <= r.End+step; t += step {
		times = append(times, t)
	}
	rng := rand.New(rand.NewPCG(uint64(r.Config.Seed), 0x6d657472696373)) // "metrics"
	g := &metricGen{run: r, times: times, step: step, rng: rng}
	g.prepare()
	var paths []string
	for i, write := range []func(w io.Writer, k int){g.vllm, g.dcgm, g.node} {
		path := filepath.Join(dir, MetricFiles[i])
		err := outfile.Write(path, outfile.Options{InDir: true}, func(w *bufio.Writer) error {
			for k, t := range times {
				fmt.Fprintf(w, "# llmprof-scrape %d\n", t)
				write(w, k)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// metricGen computes the per-scrape values.
type metricGen struct {
	run   *Run
	times []int64
	step  int64
	rng   *rand.Rand

	// Per engine and scrape.
	running, waiting [][]int
	kvUsed           [][]float64
	preempt          [][]int
	queries, hits    [][]float64
	success          [][]int
	busy             [][]float64 // GPU busy share of the interval before the scrape
	// Cumulative counters that need state across scrapes, per engine.
	pause, pauseDur, txPause, ecn, rxBytes, diskRead, diskTime, powerViol []float64
}

func (g *metricGen) prepare() {
	r := g.run
	n, ne := len(g.times), len(r.Engines)
	mk := func() [][]int {
		out := make([][]int, ne)
		for i := range out {
			out[i] = make([]int, n)
		}
		return out
	}
	mkf := func() [][]float64 {
		out := make([][]float64, ne)
		for i := range out {
			out[i] = make([]float64, n)
		}
		return out
	}
	g.running, g.waiting, g.preempt, g.success = mk(), mk(), mk(), mk()
	g.kvUsed, g.queries, g.hits, g.busy = mkf(), mkf(), mkf(), mkf()
	engineOf := map[string]int{}
	for e, en := range r.Engines {
		for _, t := range en.Tenants {
			engineOf[t] = e
		}
	}
	idx := func(t int64) int { // first scrape at or after t
		i, _ := slices.BinarySearch(g.times, t)
		return i
	}
	for qi := range r.Requests {
		q := &r.Requests[qi]
		e := engineOf[q.Tenant]
		for k := idx(q.Enqueued); k < n && g.times[k] < q.FirstScheduled; k++ {
			g.waiting[e][k]++
		}
		if len(q.Tokens) > 0 {
			tok := 0
			for k := idx(q.FirstScheduled); k < n && g.times[k] < q.LastToken(); k++ {
				if q.preemptedAt(g.times[k]) {
					g.waiting[e][k]++
					continue
				}
				g.running[e][k]++
				for tok < len(q.Tokens) && q.Tokens[tok] <= g.times[k] {
					tok++
				}
				g.kvUsed[e][k] += float64(q.InputTokens + tok)
			}
		}
		for _, p := range q.Preemptions {
			for k := idx(p.From); k < n; k++ {
				g.preempt[e][k]++
			}
		}
		for k := idx(q.Arrival); k < n; k++ {
			g.queries[e][k] += float64(q.InputTokens)
			if q.CacheHit {
				g.hits[e][k] += float64(q.CachedTokens)
			}
		}
		for k := idx(q.End); k < n; k++ {
			g.success[e][k]++
		}
	}
	for e := range r.Engines {
		for k, t := range g.times {
			g.kvUsed[e][k] /= float64(r.kvCapacity(e, t))
			// vLLM preempts only when no free block is left, so a scrape
			// after a preemption sees the pool (nearly) full.
			if k > 0 && g.preempt[e][k] > g.preempt[e][k-1] {
				g.kvUsed[e][k] = max(g.kvUsed[e][k], 0.985+0.015*g.rng.Float64())
			}
		}
	}
	engineOfStep := func(s int) int { return r.Steps[s].Engine }
	for i := range r.Ops {
		op := &r.Ops[i]
		e := engineOfStep(op.Step)
		// The scrape at times[k] reports the interval (times[k-1], times[k]].
		for k := idx(op.Start); k < n; k++ {
			lo, hi := max(op.Start, g.times[k]-g.step), min(op.End, g.times[k])
			if hi <= lo {
				break
			}
			g.busy[e][k] += float64(hi-lo) / float64(g.step)
		}
	}
	g.pause, g.pauseDur, g.txPause = make([]float64, ne), make([]float64, ne), make([]float64, ne)
	g.ecn, g.rxBytes, g.diskRead, g.diskTime, g.powerViol = make([]float64, ne), make([]float64, ne), make([]float64, ne), make([]float64, ne), make([]float64, ne)
	for e := range ne {
		g.pause[e] = float64(1000 + g.rng.IntN(5000))
		g.rxBytes[e] = 1e12
		g.diskRead[e] = 8e10
	}
}

// preemptedAt reports whether the request is preempted (waiting again) at t.
func (q *Request) preemptedAt(t int64) bool {
	for _, p := range q.Preemptions {
		if t >= p.From && t < p.To {
			return true
		}
	}
	return false
}

// poisson draws a count with mean m (normal approximation above 30).
func (g *metricGen) poisson(m float64) float64 {
	if m <= 0 {
		return 0
	}
	if m > 30 {
		return math.Max(0, math.Round(m+math.Sqrt(m)*g.rng.NormFloat64()))
	}
	l, k, p := math.Exp(-m), 0.0, 1.0
	for {
		p *= g.rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

func (g *metricGen) vllm(w io.Writer, k int) {
	r := g.run
	family := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	lbl := func(e int) string {
		return fmt.Sprintf(`engine="0",model_name=%q`, r.Engines[e].Model)
	}
	family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.")
	for e := range r.Engines {
		fmt.Fprintf(w, "vllm:num_requests_running{%s} %d.0\n", lbl(e), g.running[e][k])
	}
	family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.")
	for e := range r.Engines {
		fmt.Fprintf(w, "vllm:num_requests_waiting{%s} %d.0\n", lbl(e), g.waiting[e][k])
	}
	family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.")
	for e := range r.Engines {
		fmt.Fprintf(w, "vllm:kv_cache_usage_perc{%s} %s\n", lbl(e), ff(math.Min(1, g.kvUsed[e][k])))
	}
	family("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.")
	for e := range r.Engines {
		fmt.Fprintf(w, "vllm:num_preemptions_total{%s} %d.0\n", lbl(e), g.preempt[e][k])
	}
	family("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.")
	for e := range r.Engines {
		fmt.Fprintf(w, "vllm:prefix_cache_queries_total{%s} %s\n", lbl(e), ff(g.queries[e][k]))
	}
	family("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.")
	for e := range r.Engines {
		fmt.Fprintf(w, "vllm:prefix_cache_hits_total{%s} %s\n", lbl(e), ff(g.hits[e][k]))
	}
	family("vllm:request_success_total", "counter", "Count of successfully processed requests.")
	for e := range r.Engines {
		fmt.Fprintf(w, "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=%q} %d.0\n", r.Engines[e].Model, g.success[e][k])
	}
}

// nominalSMClock is the H100 SXM boost clock dcgm-exporter reports, in MHz.
const nominalSMClock = 1980

func (g *metricGen) dcgm(w io.Writer, k int) {
	r := g.run
	t := g.times[k]
	lbl := func(e int) string {
		d := r.Engines[e].Device
		return fmt.Sprintf(`gpu="%d", UUID="GPU-%08x-7930-ae20-3fc6-4b0edf3ebbf%d", pci_bus_id="00000000:%02X:00.0", device="nvidia%d", modelName="NVIDIA H100 80GB HBM3", Hostname="gpu-node-7", DCGM_FI_DRIVER_VERSION="550.54.15"`,
			d, 0xa8affe7e+d, d, 0x18+0x12*d, d)
	}
	family := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	throttled := func(e int) *Episode { return r.activeEpisode(e, EpisodeThrottle, t-g.step/2) }
	family("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).")
	for e := range r.Engines {
		clock := float64(nominalSMClock)
		if g.rng.Float64() < 0.05 {
			clock -= 15
		}
		if ep := throttled(e); ep != nil {
			clock = math.Round(nominalSMClock/ep.factor()/15) * 15
		}
		fmt.Fprintf(w, "DCGM_FI_DEV_SM_CLOCK{%s} %s\n", lbl(e), ff(clock))
	}
	family("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge", "Current clock throttle reasons.")
	for e := range r.Engines {
		reasons := 0
		if g.busy[e][k] < 0.05 {
			reasons = 0x1 // gpu_idle
		}
		if throttled(e) != nil {
			reasons = 0x4 // power_cap
		}
		fmt.Fprintf(w, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{%s} %d\n", lbl(e), reasons)
	}
	family("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in us).")
	for e := range r.Engines {
		if throttled(e) != nil {
			g.powerViol[e] += float64(g.step) / 1e3
		}
		fmt.Fprintf(w, "DCGM_FI_DEV_POWER_VIOLATION{%s} %s\n", lbl(e), ff(g.powerViol[e]))
	}
	family("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).")
	for e := range r.Engines {
		fmt.Fprintf(w, "DCGM_FI_DEV_GPU_UTIL{%s} %d\n", lbl(e), int(math.Min(100, math.Round(100*g.busy[e][k]))))
	}
	family("DCGM_FI_PROF_SM_ACTIVE", "gauge", "The ratio of cycles an SM has at least 1 warp assigned (in %).")
	for e := range r.Engines {
		fmt.Fprintf(w, "DCGM_FI_PROF_SM_ACTIVE{%s} %s\n", lbl(e), ff(math.Min(1, 0.85*g.busy[e][k]+0.01*g.rng.Float64())))
	}
	family("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).")
	for e := range r.Engines {
		p := 95 + 520*math.Min(1, g.busy[e][k]) + 6*g.rng.NormFloat64()
		if throttled(e) != nil {
			p = math.Min(p, 400)
		}
		fmt.Fprintf(w, "DCGM_FI_DEV_POWER_USAGE{%s} %.6f\n", lbl(e), p)
	}
	family("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).")
	for e := range r.Engines {
		fmt.Fprintf(w, "DCGM_FI_DEV_GPU_TEMP{%s} %d\n", lbl(e), 55+int(10*math.Min(1, g.busy[e][k]))+g.rng.IntN(2))
	}
	family("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.")
	for e := range r.Engines {
		fmt.Fprintf(w, "DCGM_FI_DEV_XID_ERRORS{%s} 0\n", lbl(e))
	}
	family("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.")
	for e := range r.Engines {
		fmt.Fprintf(w, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER{%s} 0\n", lbl(e))
	}
}

func (g *metricGen) node(w io.Writer, k int) {
	r := g.run
	t := g.times[k]
	dt := float64(g.step) / 1e9
	nic := func(e int) string { return fmt.Sprintf(`device="ens%df0np0"`, 1+e) }
	family := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	for e := range r.Engines {
		storm := r.activeEpisode(e, EpisodePFCStorm, t-g.step/2) != nil
		rate := 2.0
		if storm {
			rate = 6000
		}
		n := g.poisson(rate * dt)
		g.pause[e] += n
		g.pauseDur[e] += n * (8 + 4*g.rng.Float64())
		g.txPause[e] += g.poisson(0.5 * dt)
		g.ecn[e] += g.poisson(20 * dt)
		g.rxBytes[e] += math.Max(0, 2e9*g.busy[e][k]*dt*(1+0.05*g.rng.NormFloat64()))
		g.diskRead[e] += g.poisson(3e6 * dt)
		g.diskTime[e] += math.Max(0, 0.002*dt*(1+0.3*g.rng.NormFloat64()))
	}
	family("node_ethtool_received_prio3_pause", "untyped", "Network interface rx_prio3_pause")
	for e := range r.Engines {
		fmt.Fprintf(w, "node_ethtool_received_prio3_pause{%s} %s\n", nic(e), ff(g.pause[e]))
	}
	family("node_ethtool_received_prio3_pause_duration", "untyped", "Network interface rx_prio3_pause_duration")
	for e := range r.Engines {
		fmt.Fprintf(w, "node_ethtool_received_prio3_pause_duration{%s} %s\n", nic(e), ff(math.Round(g.pauseDur[e])))
	}
	family("node_ethtool_transmitted_prio3_pause", "untyped", "Network interface tx_prio3_pause")
	for e := range r.Engines {
		fmt.Fprintf(w, "node_ethtool_transmitted_prio3_pause{%s} %s\n", nic(e), ff(g.txPause[e]))
	}
	family("node_infiniband_np_ecn_marked_roce_packets_received_total", "counter", "Number of ECN marked RoCEv2 packets received")
	for e := range r.Engines {
		fmt.Fprintf(w, "node_infiniband_np_ecn_marked_roce_packets_received_total{device=\"mlx5_%d\",port=\"1\"} %s\n", e, ff(g.ecn[e]))
	}
	family("node_network_receive_bytes_total", "counter", "Network device statistic receive_bytes.")
	for e := range r.Engines {
		fmt.Fprintf(w, "node_network_receive_bytes_total{%s} %s\n", nic(e), ff(math.Round(g.rxBytes[e])))
	}
	family("node_disk_read_bytes_total", "counter", "The total number of bytes read successfully.")
	for e := range r.Engines {
		fmt.Fprintf(w, "node_disk_read_bytes_total{device=\"nvme%dn1\"} %s\n", e, ff(g.diskRead[e]))
	}
	family("node_disk_io_time_seconds_total", "counter", "Total seconds spent doing I/Os.")
	for e := range r.Engines {
		fmt.Fprintf(w, "node_disk_io_time_seconds_total{device=\"nvme%dn1\"} %s\n", e, ff(g.diskTime[e]))
	}
}

func ff(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// MarshalText writes the kind's name ("pfc-pause-storm") in JSON truth files.
func (k EpisodeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }
