package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/signals"
)

func infraResult() *signals.Result {
	return &signals.Result{
		Series: 40, Catalogued: 38, Scored: 36, Overlapping: 40, Window: 1e9, Start: 1764583200e9,
		Layers: map[signals.Layer]int{signals.LayerService: 10, signals.LayerRuntime: 16, signals.LayerInfrastructure: 12, signals.LayerUnknown: 2},
		Spikes: []signals.Spike{
			{From: 1764583223e9, To: 1764583227e9, Tested: 36,
				Latency: []signals.Departure{{Metric: "ttft", Tenant: "batch-eval", P99: 2199, Baseline: 99, Z: 24.4}},
				Signals: []signals.Deviation{{Series: `node_ethtool_received_prio3_pause{device="ens2f0np0"}`, Short: `node_ethtool_received_prio3_pause{device="ens2f0np0"}`,
					Name: "node_ethtool_received_prio3_pause", Layer: signals.LayerInfrastructure, Role: signals.RoleMechanism, Unit: "pause frames/s",
					Value: 6010, Baseline: 2, Z: 4053.7, Q: 1e-9, Lag: 2e9, Mechanism: "paused queues stall RDMA traffic"}},
				Load: []signals.Deviation{{Name: "vllm:num_requests_running", Role: signals.RoleLoad}}},
			{From: 1764583201e9, To: 1764583202e9, Tested: 36,
				Latency: []signals.Departure{{Metric: "itl", P99: 90, Baseline: 32, Z: 6.5}},
				Load:    []signals.Deviation{{Name: "DCGM_FI_PROF_SM_ACTIVE", Role: signals.RoleLoad}}},
		},
	}
}

func TestInfrastructureText(t *testing.T) {
	r := &Report{Schema: Schema, Infrastructure: infraResult()}
	var b bytes.Buffer
	if err := r.WriteText(&b, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"INFRASTRUCTURE  40 metric series (38 catalogued: service 10, runtime 16, infrastructure 12, unknown 2), 1s windows",
		"10:00:23–10:00:27  TTFT p99 2,199 ms vs 99 ms baseline (z 24.4, tenant batch-eval)",
		`1. [infrastructure] node_ethtool_received_prio3_pause{device="ens2f0np0"}  2 → 6.01e+03 pause frames/s (z 4,053.7, q <1e-4, 2s before)`,
		"plausible mechanism: paused queues stall RDMA traffic",
		"moved with load too: vllm:num_requests_running",
		"rose with load: no mechanism signal deviated; DCGM_FI_PROF_SM_ACTIVE",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	var j bytes.Buffer
	if err := r.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Infrastructure signals.Result `json:"infrastructure"`
	}
	if err := json.Unmarshal(j.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if sp := back.Infrastructure.Spikes; len(sp) != 2 || sp[0].Signals[0].Name != "node_ethtool_received_prio3_pause" || sp[0].Signals[0].Layer != signals.LayerInfrastructure {
		t.Errorf("JSON infrastructure %+v", back.Infrastructure)
	}
	// Without metrics there is no section and no JSON field.
	r.Infrastructure = nil
	b.Reset()
	j.Reset()
	_ = r.WriteText(&b, TextOptions{})
	_ = r.WriteJSON(&j)
	if strings.Contains(b.String(), "INFRASTRUCTURE") || strings.Contains(j.String(), "infrastructure") {
		t.Error("an INFRASTRUCTURE section without metrics")
	}
}

// Metrics that do not overlap the requests say so, not "no latency spike".
func TestInfrastructureNoOverlap(t *testing.T) {
	const day = int64(86_400e9)
	r := &Report{Schema: Schema, Infrastructure: &signals.Result{Series: 12, Catalogued: 12, Start: 1764583200e9, End: 1764583260e9,
		SamplesFrom: 1764583200e9 + 67*day, SamplesTo: 1764583200e9 + 67*day, Layers: map[signals.Layer]int{signals.LayerService: 12}}}
	var b bytes.Buffer
	if err := r.WriteText(&b, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "no overlap: no metric sample lies within the requests' window (2025-12-01 10:00:00–2025-12-01 10:01:00); the samples run 2026-02-06 10:00:00–2026-02-06 10:00:00") ||
		strings.Contains(out, "no latency spike") {
		t.Errorf("text:\n%s", out)
	}
}
