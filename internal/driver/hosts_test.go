package driver

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/internal/sqlite3shell"
)

// Two real exports from different machines (an RTX 4060 desktop and an
// 8×H100 cluster node, TARGET_INFO_SYSTEM_ENV Hostname differs): analyze
// shows two hosts, keeps each device's window inside its own export, and
// says at the top that the inputs are not one run.
func TestAnalyzeTwoHostsNotMerged(t *testing.T) {
	a := shareddata.Path(t, "testdata/nsys/frasertajima-weatherbench2-report1-nsys2025.5.1.sqlite")
	b := shareddata.Path(t, "testdata/nsys/nvidia-fuser-df8f397-report1-nsys2024.6.2.sqlite")
	for _, p := range []string{a, b} {
		if rows := sqlite3shell.Rows(t, p, "SELECT count(*) FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'"); len(rows) != 1 || rows[0][0] != "1" {
			t.Fatalf("%s: no Hostname row (%v)", p, rows)
		}
	}
	stdout := analyzeJSON(t, a, b)
	var rep struct {
		Unrelated string `json:"unrelated_inputs"`
		GPU       struct {
			Hosts []struct {
				Name    string   `json:"name"`
				Sources []string `json:"sources"`
			} `json:"hosts"`
			Devices []struct {
				Host     string  `json:"host"`
				Device   int     `json:"device"`
				Name     string  `json:"name"`
				WindowMs float64 `json:"window_ms"`
			} `json:"devices"`
		} `json:"gpu"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.GPU.Hosts) != 2 || rep.GPU.Hosts[0].Name == rep.GPU.Hosts[1].Name {
		t.Fatalf("hosts = %+v", rep.GPU.Hosts)
	}
	// Both have a device 0; each is its own, with its own window (no export
	// is longer than a second; merged, the window would span their 10
	// months apart).
	if len(rep.GPU.Devices) != 2 || rep.GPU.Devices[0].Host == rep.GPU.Devices[1].Host {
		t.Fatalf("devices = %+v", rep.GPU.Devices)
	}
	names := map[string]bool{}
	for _, d := range rep.GPU.Devices {
		names[d.Name] = true
		if d.Device != 0 || d.WindowMs > 1000 {
			t.Errorf("device %+v: a window longer than its export", d)
		}
	}
	if !names["NVIDIA GeForce RTX 4060"] || !names["NVIDIA H100 80GB HBM3"] {
		t.Errorf("device names %v", names)
	}
	if !strings.Contains(rep.Unrelated, "2 different hosts") {
		t.Errorf("unrelated_inputs = %q", rep.Unrelated)
	}
	stdout = analyzeText(t, 0, Options{}, a, b)
	lines := strings.Split(stdout, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[2], "NOTE  these inputs are not one run") {
		t.Errorf("the report does not open with the note:\n%s", strings.Join(lines[:min(5, len(lines))], "\n"))
	}
	if !strings.Contains(stdout, "2 hosts (or captures that cannot be aligned)") {
		t.Errorf("GPU section does not group by host:\n%s", stdout)
	}
	// The HTML timeline keeps the two device 0s apart too: one row each,
	// named by its host, each as busy as the GPU section says.
	timelineMatchesGPUSection(t, run(t, Options{}, a, b), 2)
}

// The HTML timeline's busy time of each device is the GPU section's, on the
// demo (one host, two devices) as on two hosts above: one busy rule
// (ingest.GPUOp.Busy), one device identity (host, device).
func TestGPUTimelineMatchesGPUSection(t *testing.T) {
	timelineMatchesGPUSection(t, run(t, Options{}, demoDir), 2)
}

func timelineMatchesGPUSection(t *testing.T, a *Result, devices int) {
	t.Helper()
	rep := a.Report(testVersion)
	tl := a.HTMLViews(rep).GPU
	if tl == nil || len(tl.Devices) != devices || len(rep.GPU.Devices) != devices {
		t.Fatalf("timeline %+v, GPU section %d devices; want %d", tl, len(rep.GPU.Devices), devices)
	}
	for i, row := range tl.Devices {
		d := rep.GPU.Devices[i]
		if row.Host != d.Host || row.Device != d.Device {
			t.Errorf("timeline row %d is %q/%d, the GPU section's device %q/%d", i, row.Host, row.Device, d.Host, d.Device)
		}
		var busyNs float64
		for _, v := range row.Busy {
			busyNs += v * float64(tl.BinNs)
		}
		if got := busyNs / 1e6; math.Abs(got-d.BusyMs) > 1e-6*max(1, d.BusyMs) {
			t.Errorf("device %q/%d: timeline busy %.6f ms, GPU section %.6f ms", d.Host, d.Device, got, d.BusyMs)
		}
	}
}
