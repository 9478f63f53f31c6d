package signals

import (
	"regexp"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// Layer is the layer of llmprof's origin article a signal belongs to: the
// serving engine, the GPU runtime under it, or the infrastructure under that
// (network, storage, sharing, containers). README.md's "Where llmprof comes
// from" lists the layers.
type Layer string

const (
	LayerService        Layer = "service"
	LayerRuntime        Layer = "runtime"
	LayerInfrastructure Layer = "infrastructure"
	LayerUnknown        Layer = "unknown"
)

// Role says how a signal relates to latency: a Mechanism can slow requests
// by itself (a clock cap, pause frames, a full KV cache); Load moves with the
// traffic and so with latency whatever the cause (utilization, bytes,
// running requests); a Symptom is latency seen from elsewhere (queue depth).
// Ranking puts mechanisms first (docs/signals.md, "Correlation is not cause").
type Role string

const (
	RoleMechanism Role = "mechanism"
	RoleLoad      Role = "load"
	RoleSymptom   Role = "symptom"
)

// Transform is how a series becomes a per-window value.
type Transform string

const (
	// TransformLevel: the mean of the samples in the window (gauges).
	TransformLevel Transform = "level"
	// TransformRate: the increase per second, resets handled (counters).
	TransformRate Transform = "rate"
)

// Entry is one catalogued signal.
type Entry struct {
	// Name is the sample name as exposed; Pattern, when set, matches
	// families of names instead (per-priority pause counters).
	Name    string         `json:"name"`
	Pattern *regexp.Regexp `json:"-"`
	// Aliases are older or newer names of the same signal.
	Aliases  []string `json:"aliases,omitempty"`
	Exporter string   `json:"exporter"`
	Layer    Layer    `json:"layer"`
	Area     string   `json:"area"`
	Role     Role     `json:"role"`
	Unit     string   `json:"unit"`
	// Transform overrides the one the declared type implies (untyped
	// ethtool counters are rates).
	Transform Transform `json:"transform,omitempty"`
	// Near, when set, is the level a gauge must reach (as a ratio 0–1 of
	// its limit) for its deviation to count as a mechanism: a KV cache at
	// 40% is busier, not full. Below it the deviation is load.
	Near float64 `json:"near,omitempty"`
	// Bad says what a bad value looks like; Mechanism how it slows requests.
	Bad       string `json:"bad"`
	Mechanism string `json:"mechanism,omitempty"`
}

func exact(exporter string, layer Layer, area string, role Role, unit string, tr Transform, bad, mech string, names ...string) Entry {
	return Entry{Name: names[0], Aliases: names[1:], Exporter: exporter, Layer: layer, Area: area, Role: role, Unit: unit, Transform: tr, Bad: bad, Mechanism: mech}
}

func pattern(re, shown, exporter string, layer Layer, area string, role Role, unit string, tr Transform, bad, mech string) Entry {
	return Entry{Name: shown, Pattern: regexp.MustCompile("^" + re + "$"), Exporter: exporter, Layer: layer, Area: area, Role: role, Unit: unit, Transform: tr, Bad: bad, Mechanism: mech}
}

const (
	vllmExp = "vllm"
	sgl     = "sglang"
	dcgm    = "dcgm-exporter"
	node    = "node_exporter"
	kube    = "kubelet"
	ctrd    = "containerd"
)

// Catalog lists the signals llmprof knows, with names, units and label sets
// as the exporters publish them (docs/signals.md cites the sources). A
// metric not listed is still read and scored, as layer "unknown".
var Catalog = []Entry{
	// Service layer: vLLM V1 (vllm/v1/metrics/loggers.py), labels engine, model_name.
	exact(vllmExp, LayerService, "scheduler", RoleLoad, "requests", TransformLevel, "grows with load; flat at max_num_seqs means the batch is full", "", "vllm:num_requests_running"),
	exact(vllmExp, LayerService, "scheduler", RoleSymptom, "requests", TransformLevel, "> 0 for long: requests queue before prefill (TTFT grows)", "", "vllm:num_requests_waiting"),
	near(exact(vllmExp, LayerService, "kv-cache", RoleMechanism, "ratio 0–1", TransformLevel, "≥ 0.95: the KV cache is full and the scheduler preempts", "a full KV cache stops admission and preempts running requests, which recompute their prefill", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"), 0.95),
	exact(vllmExp, LayerService, "kv-cache", RoleMechanism, "preemptions/s", TransformRate, "any rate > 0: requests are evicted and recomputed", "a preempted request waits again and recomputes its prefill (TTFT and ITL grow)", "vllm:num_preemptions_total", "vllm:num_preemptions"),
	exact(vllmExp, LayerService, "kv-cache", RoleLoad, "tokens/s", TransformRate, "falls relative to hits when the prefix cache stops hitting", "", "vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
	exact(vllmExp, LayerService, "kv-cache", RoleMechanism, "tokens/s", TransformRate, "drops relative to queries: more prefill to compute", "fewer cached prefix tokens means more prefill work per request", "vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
	exact(vllmExp, LayerService, "throughput", RoleLoad, "tokens/s", TransformRate, "load", "", "vllm:prompt_tokens_total"),
	exact(vllmExp, LayerService, "throughput", RoleLoad, "tokens/s", TransformRate, "load", "", "vllm:generation_tokens_total"),
	exact(vllmExp, LayerService, "throughput", RoleLoad, "requests/s", TransformRate, "finished_reason=abort rising: clients give up", "", "vllm:request_success_total"),
	exact(vllmExp, LayerService, "lifecycle", RoleMechanism, "0/1", TransformLevel, "1 (asleep) while requests arrive", "a sleeping engine must reload weights before serving", "vllm:engine_sleep_state"),
	exact(vllmExp, LayerService, "errors", RoleMechanism, "requests/s", TransformRate, "any", "NaNs in logits corrupt requests", "vllm:corrupted_requests_total"),
	// SGLang (python/sglang/srt/metrics/collector.py).
	exact(sgl, LayerService, "scheduler", RoleLoad, "requests", TransformLevel, "grows with load", "", "sglang:num_running_reqs"),
	exact(sgl, LayerService, "scheduler", RoleSymptom, "requests", TransformLevel, "> 0 for long: queueing", "", "sglang:num_queue_reqs"),
	near(exact(sgl, LayerService, "kv-cache", RoleMechanism, "ratio 0–1", TransformLevel, "≥ 0.95: KV pool full, requests retracted", "a full KV pool retracts running requests", "sglang:token_usage"), 0.95),
	exact(sgl, LayerService, "kv-cache", RoleMechanism, "requests", TransformLevel, "> 0: requests retracted (SGLang's preemption)", "retracted requests recompute", "sglang:num_retracted_reqs"),
	exact(sgl, LayerService, "kv-cache", RoleMechanism, "ratio 0–1", TransformLevel, "drops: more prefill", "fewer prefix hits means more prefill", "sglang:cache_hit_rate"),

	// Runtime layer: NVIDIA dcgm-exporter (etc/default-counters.csv), labels
	// gpu, UUID, pci_bus_id, device, modelName, Hostname (hostname on main).
	exact(dcgm, LayerRuntime, "gpu-clock", RoleMechanism, "MHz", TransformLevel, "below the boost clock under load: power or thermal capping", "a lower SM clock makes every kernel slower", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_SM_CLOCK_HERTZ"),
	exact(dcgm, LayerRuntime, "gpu-clock", RoleMechanism, "MHz", TransformLevel, "below nominal: memory clock capped", "memory-bound kernels (decode attention) slow down", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ"),
	exact(dcgm, LayerRuntime, "gpu-clock", RoleMechanism, "bitmask", TransformLevel, "any bit but 0x1 (gpu_idle): 0x4 power_cap, 0x8 hw_slowdown, 0x20 sw_thermal, 0x40 hw_thermal, 0x80 hw_power_brake", "the driver lowered the clocks for the reason the bits give", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"),
	exact(dcgm, LayerRuntime, "gpu-clock", RoleMechanism, "µs/s", TransformRate, "any rate > 0: time spent power-capped", "clocks are held down while the board is at its power limit", "DCGM_FI_DEV_POWER_VIOLATION"),
	exact(dcgm, LayerRuntime, "gpu-clock", RoleMechanism, "µs/s", TransformRate, "any rate > 0: time spent thermally capped", "clocks are held down while the GPU is too hot", "DCGM_FI_DEV_THERMAL_VIOLATION"),
	exact(dcgm, LayerRuntime, "gpu-health", RoleMechanism, "XID code", TransformLevel, "any non-zero value: an XID error (err_code, err_msg labels); 79 = fallen off the bus, 48 = double-bit ECC", "the GPU faulted; kernels stall or the context resets", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR"),
	exact(dcgm, LayerRuntime, "gpu-health", RoleLoad, "°C", TransformLevel, "near the slowdown temperature (~85 °C for H100); below it, it follows power and load", "thermal capping follows", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS"),
	exact(dcgm, LayerRuntime, "gpu-health", RoleMechanism, "°C", TransformLevel, "near the HBM limit (~95 °C)", "memory throttling follows", "DCGM_FI_DEV_MEMORY_TEMP"),
	exact(dcgm, LayerRuntime, "gpu-health", RoleMechanism, "rows", TransformLevel, "> 0: failing HBM rows", "", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
	exact(dcgm, LayerRuntime, "gpu-health", RoleMechanism, "errors/s", TransformRate, "any", "uncorrectable ECC errors kill the context", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
	exact(dcgm, LayerRuntime, "gpu-load", RoleLoad, "W", TransformLevel, "at the board limit: power capping (with throttle reason 0x4)", "", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS"),
	exact(dcgm, LayerRuntime, "gpu-load", RoleLoad, "%", TransformLevel, "coarse (any kernel running); 100% says little", "", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO"),
	exact(dcgm, LayerRuntime, "gpu-load", RoleLoad, "%", TransformLevel, "", "", "DCGM_FI_DEV_MEM_COPY_UTIL"),
	exact(dcgm, LayerRuntime, "gpu-load", RoleLoad, "ratio 0–1", TransformLevel, "another tenant's activity on a shared (MIG/MPS) GPU", "", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO"),
	exact(dcgm, LayerRuntime, "gpu-load", RoleLoad, "ratio 0–1", TransformLevel, "", "", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO"),
	exact(dcgm, LayerRuntime, "gpu-load", RoleLoad, "ratio 0–1", TransformLevel, "", "", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO"),
	exact(dcgm, LayerRuntime, "gpu-load", RoleLoad, "ratio 0–1", TransformLevel, "", "", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO"),
	exact(dcgm, LayerRuntime, "gpu-load", RoleLoad, "ratio 0–1", TransformLevel, "near 1: memory-bandwidth bound", "", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO"),
	exact(dcgm, LayerRuntime, "gpu-memory", RoleMechanism, "MiB", TransformLevel, "near 0: allocations fail or the cache shrinks", "", "DCGM_FI_DEV_FB_FREE"),
	exact(dcgm, LayerRuntime, "gpu-memory", RoleLoad, "MiB", TransformLevel, "", "", "DCGM_FI_DEV_FB_USED"),
	exact(dcgm, LayerInfrastructure, "interconnect", RoleMechanism, "retries/s", TransformRate, "any rate > 0: PCIe link errors", "replayed PCIe packets slow host↔device copies", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL"),
	exact(dcgm, LayerInfrastructure, "interconnect", RoleLoad, "bytes/s", TransformLevel, "at the link's bandwidth: transfers queue", "", "DCGM_FI_PROF_PCIE_TX_BYTES"),
	exact(dcgm, LayerInfrastructure, "interconnect", RoleLoad, "bytes/s", TransformLevel, "at the link's bandwidth: transfers queue", "", "DCGM_FI_PROF_PCIE_RX_BYTES"),
	exact(dcgm, LayerInfrastructure, "interconnect", RoleLoad, "bytes/s", TransformLevel, "", "", "DCGM_FI_PROF_NVLINK_TX_BYTES"),
	exact(dcgm, LayerInfrastructure, "interconnect", RoleLoad, "bytes/s", TransformLevel, "", "", "DCGM_FI_PROF_NVLINK_RX_BYTES"),
	exact(dcgm, LayerInfrastructure, "interconnect", RoleLoad, "counter/s", TransformRate, "", "", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL"),
	exact(dcgm, LayerInfrastructure, "interconnect", RoleMechanism, "errors/s", TransformRate, "any rate > 0: NVLink retransmits", "replayed NVLink flits slow collectives", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"),
	exact(dcgm, LayerInfrastructure, "interconnect", RoleMechanism, "errors/s", TransformRate, "any rate > 0", "NVLink link recoveries stall collectives", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"),
	exact(dcgm, LayerInfrastructure, "interconnect", RoleMechanism, "errors/s", TransformRate, "any rate > 0", "CRC errors force retransmission", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"),

	// Infrastructure, network: node_exporter ethtool collector (mlx5 stats,
	// untyped, label device; rx→received, tx→transmitted).
	pattern(`node_ethtool_received_prio\d_pause`, "node_ethtool_received_prio{p}_pause", node, LayerInfrastructure, "network", RoleMechanism, "pause frames/s", TransformRate, "a rate well above baseline on the RoCE priority: the network pushes back (PFC pause storm)", "paused queues stall RDMA traffic, so collectives (all-reduce) and KV transfers wait"),
	pattern(`node_ethtool_received_prio\d_pause_duration`, "node_ethtool_received_prio{p}_pause_duration", node, LayerInfrastructure, "network", RoleMechanism, "µs paused/s", TransformRate, "approaching 1e6 µs/s: the priority is paused most of the time", "paused queues stall RDMA traffic"),
	pattern(`node_ethtool_transmitted_prio\d_pause`, "node_ethtool_transmitted_prio{p}_pause", node, LayerInfrastructure, "network", RoleMechanism, "pause frames/s", TransformRate, "> 0 sustained: this host cannot absorb its receive traffic", "our pauses back-pressure the fabric"),
	pattern(`node_ethtool_transmitted_prio\d_pause_duration`, "node_ethtool_transmitted_prio{p}_pause_duration", node, LayerInfrastructure, "network", RoleMechanism, "µs paused/s", TransformRate, "", "our pauses back-pressure the fabric"),
	pattern(`node_ethtool_(received|transmitted)_pause_ctrl_phy`, "node_ethtool_{received,transmitted}_pause_ctrl_phy", node, LayerInfrastructure, "network", RoleMechanism, "pause frames/s", TransformRate, "> 0: link-level pause", "link-level pauses stall all traffic on the port"),
	pattern(`node_ethtool_transmitted_pause_storm_(warning|error)_events`, "node_ethtool_transmitted_pause_storm_{warning,error}_events", node, LayerInfrastructure, "network", RoleMechanism, "events/s", TransformRate, "any: the NIC detected a pause storm (error = pause TX disabled)", "a pause storm stalls the fabric"),
	pattern(`node_ethtool_received_(discards_phy|out_of_buffer)`, "node_ethtool_received_{discards_phy,out_of_buffer}", node, LayerInfrastructure, "network", RoleMechanism, "packets/s", TransformRate, "any rate > 0: the adapter dropped packets for want of buffers", "dropped RoCE packets are retransmitted after timeouts"),
	pattern(`node_ethtool_received_prio\d_(buf_discard|cong_discard)`, "node_ethtool_received_prio{p}_{buf,cong}_discard", node, LayerInfrastructure, "network", RoleMechanism, "packets/s", TransformRate, "any rate > 0", "dropped RoCE packets are retransmitted"),
	pattern(`node_ethtool_received_(ecn_mark|prio\d_marked)`, "node_ethtool_received_ecn_mark", node, LayerInfrastructure, "network", RoleMechanism, "packets/s", TransformRate, "a rate well above baseline: congestion on the path", "ECN marks make senders slow down (DCQCN)"),
	pattern(`node_ethtool_(received_crc_errors_phy|received_symbol_err_phy|link_down_events_phy)`, "node_ethtool_{received_crc_errors,received_symbol_err,link_down_events}_phy", node, LayerInfrastructure, "network", RoleMechanism, "errors/s", TransformRate, "any rate > 0: a bad cable or optic", "corrupted frames are dropped and retransmitted"),
	pattern(`node_ethtool_outbound_pci_stalled_(rd|wr)`, "node_ethtool_outbound_pci_stalled_{rd,wr}", node, LayerInfrastructure, "interconnect", RoleMechanism, "% of last second", TransformLevel, "> 0: the NIC waits for PCIe credits", "the NIC cannot move data to/from memory fast enough"),
	// node_exporter infiniband collector (RoCE hw_counters, labels device, port).
	exact(node, LayerInfrastructure, "network", RoleMechanism, "packets/s", TransformRate, "a rate well above baseline: congestion on the path", "ECN-marked packets trigger CNPs and rate cuts", "node_infiniband_np_ecn_marked_roce_packets_received_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "packets/s", TransformRate, "well above baseline: this host is a congestion notification point", "CNPs make senders slow down", "node_infiniband_np_cnp_packets_sent_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "packets/s", TransformRate, "well above baseline: our sends are being rate-limited", "handled CNPs cut the send rate (DCQCN)", "node_infiniband_rp_cnp_packets_handled_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "packets/s", TransformRate, "any rate > 0: packet loss on the fabric", "out-of-sequence packets mean retransmission", "node_infiniband_out_of_sequence_packets_received_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "errors/s", TransformRate, "any rate > 0", "sequence errors force go-back-N retransmission", "node_infiniband_packet_sequence_errors_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "errors/s", TransformRate, "any rate > 0", "ACK timeouts stall RDMA operations for the timeout", "node_infiniband_local_ack_timeout_errors_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "drops/s", TransformRate, "any rate > 0", "receive queue without buffers drops packets", "node_infiniband_out_of_buffer_drops_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "ticks/s", TransformRate, "well above baseline: the port waits for credits", "credit starvation stalls sends", "node_infiniband_port_transmit_wait_total"),
	exact(node, LayerInfrastructure, "network", RoleLoad, "bytes/s", TransformRate, "", "", "node_infiniband_port_data_received_bytes_total"),
	exact(node, LayerInfrastructure, "network", RoleLoad, "bytes/s", TransformRate, "", "", "node_infiniband_port_data_transmitted_bytes_total"),
	// node_exporter netdev (kernel stack; RDMA bypasses it).
	exact(node, LayerInfrastructure, "network", RoleLoad, "bytes/s", TransformRate, "", "", "node_network_receive_bytes_total"),
	exact(node, LayerInfrastructure, "network", RoleLoad, "bytes/s", TransformRate, "", "", "node_network_transmit_bytes_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "packets/s", TransformRate, "any rate > 0", "dropped request packets are retransmitted by TCP", "node_network_receive_drop_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "errors/s", TransformRate, "any rate > 0", "", "node_network_receive_errs_total"),
	exact(node, LayerInfrastructure, "network", RoleMechanism, "packets/s", TransformRate, "any rate > 0", "", "node_network_transmit_drop_total"),

	// Infrastructure, storage: node_exporter diskstats and PSI.
	exact(node, LayerInfrastructure, "storage", RoleLoad, "bytes/s", TransformRate, "far below the device's bandwidth during a model load: a slow path", "", "node_disk_read_bytes_total"),
	exact(node, LayerInfrastructure, "storage", RoleLoad, "bytes/s", TransformRate, "", "", "node_disk_written_bytes_total"),
	exact(node, LayerInfrastructure, "storage", RoleMechanism, "s/s", TransformRate, "rising per read: slow reads (divide by reads completed for latency)", "slow reads delay weight loads and swapped-in KV blocks", "node_disk_read_time_seconds_total"),
	exact(node, LayerInfrastructure, "storage", RoleMechanism, "s/s", TransformRate, "≈ 1: the device is saturated", "", "node_disk_io_time_seconds_total"),
	exact(node, LayerInfrastructure, "storage", RoleMechanism, "s/s", TransformRate, "queue depth rising", "", "node_disk_io_time_weighted_seconds_total"),
	exact(node, LayerInfrastructure, "storage", RoleLoad, "reads/s", TransformRate, "", "", "node_disk_reads_completed_total"),
	exact(node, LayerInfrastructure, "storage", RoleMechanism, "I/Os", TransformLevel, "high: queueing at the device", "", "node_disk_io_now"),
	exact(node, LayerInfrastructure, "storage", RoleMechanism, "s/s", TransformRate, "> 0: tasks stalled on I/O", "processes wait for I/O", "node_pressure_io_stalled_seconds_total"),
	exact(node, LayerInfrastructure, "storage", RoleMechanism, "s/s", TransformRate, "> 0: tasks waiting on I/O", "", "node_pressure_io_waiting_seconds_total"),
	exact(node, LayerInfrastructure, "storage", RoleMechanism, "errors/s", TransformRate, "any", "media errors mean retries", "nvme_media_errors_total"),

	// Infrastructure, containers: kubelet and containerd CRI.
	exact(kube, LayerInfrastructure, "container", RoleMechanism, "s", TransformLevel, "seconds: GPU device injection or image pulls delay start-up", "a container that starts late serves late", "kubelet_pod_start_sli_duration_seconds_sum"),
	exact(kube, LayerInfrastructure, "container", RoleMechanism, "errors/s", TransformRate, "any", "", "kubelet_runtime_operations_errors_total"),
	exact(ctrd, LayerInfrastructure, "container", RoleMechanism, "s", TransformLevel, "seconds: the OCI prestart hook (nvidia-container-runtime-hook) is slow", "", "containerd_cri_container_start_seconds_sum"),
}

// near sets the limit fraction of the entry.
func near(e Entry, f float64) Entry { e.Near = f; return e }

var byName = func() map[string]*Entry {
	m := map[string]*Entry{}
	for i := range Catalog {
		e := &Catalog[i]
		if e.Pattern != nil {
			continue
		}
		m[e.Name] = e
		for _, a := range e.Aliases {
			m[a] = e
		}
	}
	return m
}()

// Lookup returns the catalog entry of a sample name, or nil.
func Lookup(name string) *Entry {
	if e := byName[name]; e != nil {
		return e
	}
	if !strings.HasPrefix(name, "node_ethtool_") {
		return nil
	}
	for i := range Catalog {
		if p := Catalog[i].Pattern; p != nil && p.MatchString(name) {
			return &Catalog[i]
		}
	}
	return nil
}

// transformOf is how a series is scored: the entry's transform, else rates
// for counters and levels for everything else.
func transformOf(e *Entry, se *ingest.Series) Transform {
	if e != nil && e.Transform != "" {
		return e.Transform
	}
	if se.Type == ingest.MetricCounter {
		return TransformRate
	}
	return TransformLevel
}
