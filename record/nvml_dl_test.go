//go:build linux

package record

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildFakeNVML compiles testdata/fakenvml/fakenvml.c into a shared
// library that stands in for libnvidia-ml.so.1. The C compiler is needed
// for this test only, never by llmprof's build.
func buildFakeNVML(t *testing.T) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake libnvidia-ml: the dlopen binding stays untested here", cc)
	}
	so := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", so, "testdata/fakenvml/fakenvml.c").CombinedOutput()
	if err != nil {
		t.Fatalf("%s testdata/fakenvml/fakenvml.c: %v\n%s", cc, err, out)
	}
	return so
}

// The binding against a fake library: every value the C side sets arrives
// in the rows, through C's struct layouts; the two entry points the fake
// does not export are noticed and never called.
func TestNVMLFakeLibrary(t *testing.T) {
	so := buildFakeNVML(t)
	gs, err := openNVML(NVMLOptions{LibraryPath: so})
	if err != nil {
		t.Fatal(err)
	}
	s := gs.(*nvmlSampler)
	defer s.Close()
	info, gpus := s.Info()
	if !info.Available || info.DriverVersion != "999.88.77" || info.NVMLVersion != "12.999.88.77" || info.CUDADriverVersion != 12080 {
		t.Fatalf("info %+v", info)
	}
	if len(gpus) != 2 {
		t.Fatalf("%d GPUs, want 2", len(gpus))
	}
	want := GPUInfo{Index: 1, UUID: "GPU-fake-1", Name: "Fake H200", PCIBusID: "00000000:19:00.0", Arch: "hopper",
		ComputeCap: "9.0", MemoryTotalBytes: 141 << 30, MaxSMClockMHz: 1980, PowerLimitMW: 700_000, NVLinks: 3, GPMSupported: true}
	if got, exp := describeRow(gpus[1]), describeRow(want); got != exp {
		t.Fatalf("GPU 1\n got %s\nwant %s", got, exp)
	}
	if s.symbols[symClocksEvent] || s.symbols[symGPMMigSampleGet] || !s.symbols[symGPMMetricsGet] || !s.symbols[symMemoryInfoV2] {
		t.Fatalf("symbols %v", s.symbols)
	}
	rs := &rowSink{}
	s.sinks = rs.sinks()
	for _, g := range s.gpus {
		s.pollDevice(g)
		s.pollGPM(g)
		s.pollGPM(g)
	}
	s.drain()
	s.drain()
	if len(rs.device) != 2 {
		t.Fatalf("%d device rows", len(rs.device))
	}
	d := rs.device[1]
	if d.MonoNs == 0 || d.RealNs == 0 {
		t.Fatalf("row without timestamps %+v", d)
	}
	d.MonoNs, d.RealNs, d.PollLatencyNs = 0, 0, 0
	wantRow := DeviceSample{GPU: 1, GPUUUID: "GPU-fake-1",
		UtilGPUPct: ptr(uint32(77)), UtilMemPct: ptr(uint32(33)),
		MemUsedBytes: ptr(uint64(6<<30 + 1)), MemReservedBytes: ptr(uint64(1 << 29)), MemTotalBytes: ptr(uint64(141 << 30)),
		SMClockMHz: ptr(uint32(1755)), MemClockMHz: ptr(uint32(3201)),
		PowerAvgMW: ptr(uint32(450_500)), PowerInstantMW: ptr(uint32(401_234)), EnergyMJ: ptr(uint64(987_654_321)),
		TempC: ptr(uint32(58)), PCIeTXBytes: ptr(uint64(1_111_111_111)), PCIeRXBytes: ptr(uint64(2_222_222_222)),
		NVLinkTXKiB: ptr(uint64(100 + 101 + 102)), NVLinkRXKiB: ptr(uint64(1000 + 1001 + 1002)),
	}
	if got, exp := describeRow(d), describeRow(wantRow); got != exp {
		t.Fatalf("device row\n got %s\nwant %s", got, exp)
	}
	// 5 sampling types × 2 samples × 2 GPUs, from the first drain only.
	if len(rs.buffered) != 20 {
		t.Fatalf("%d buffered rows, want 20", len(rs.buffered))
	}
	for _, b := range rs.buffered {
		var want float64
		i := float64(b.NVMLTimestampUs - 1_796_000_000_000_001)
		if b.SamplingType == samplesTotalPower {
			want = 300_000 + 10_000*i
		} else {
			want = 10.5*(i+1) + float64(b.SamplingType)
		}
		if b.Value != want || (b.SamplingType == samplesTotalPower) != (b.ValueType == valueUInt) {
			t.Errorf("buffered %+v, want value %v", b, want)
		}
	}
	// Per GPU: one utilization row (first drain) and two running rows per
	// drain.
	var util, running int
	for _, p := range rs.process {
		switch p.Source {
		case "utilization":
			util++
			if p.Pid != 4242 || *p.SMUtilPct != 61 || *p.MemUtilPct != 12 || *p.NVMLTimestampUs != 1_796_000_000_000_000 {
				t.Errorf("utilization row %+v", p)
			}
		case "running":
			running++
			if p.GI != nil || p.CI != nil || (p.Pid == 4242) != (*p.UsedMemoryBytes == 3<<30) {
				t.Errorf("running row %+v", p)
			}
		}
	}
	if util != 2 || running != 8 {
		t.Fatalf("process rows: %d utilization, %d running", util, running)
	}
	if len(rs.gpm) != 2*len(gpmMetrics) {
		t.Fatalf("%d GPM rows, want %d", len(rs.gpm), 2*len(gpmMetrics))
	}
	for _, m := range rs.gpm {
		if m.Value != float64(m.MetricID)*2.25 {
			t.Errorf("gpm row %+v", m)
		}
	}
	if len(rs.events) != 0 {
		t.Errorf("events %q", rs.events)
	}
}

// Through Record with the real openNVML: the capture's tables and manifest.
func TestRecordNVMLFakeLibrary(t *testing.T) {
	so := buildFakeNVML(t)
	rt := newRecordTest(t, "sh", "-c", "sleep 0.2")
	rt.opts.newSampler = openNVML
	rt.opts.NVML = NVMLOptions{LibraryPath: so, DeviceInterval: 10 * time.Millisecond, DrainInterval: 20 * time.Millisecond}
	c := checkFinal(t, rt.run(t), StatusComplete)
	m := c.Manifest
	if !m.NVML.Available || m.NVML.DriverVersion != "999.88.77" || len(m.GPUs) != 2 || m.Tool.NVMLBinding != NVMLBinding {
		t.Fatalf("manifest nvml %+v gpus %d binding %q", m.NVML, len(m.GPUs), m.Tool.NVMLBinding)
	}
	var rows int
	if _, err := ReadTable(c, func(d *DeviceSample) error {
		rows++
		if *d.PowerAvgMW != 450_500 || *d.TempC != 58 {
			t.Errorf("device row %+v", d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if rows < 4 {
		t.Fatalf("%d device rows in 0.2 s at 10 ms on 2 GPUs", rows)
	}
}

// A library that is not there: Init fails, dlopen's reason is in the error,
// and nothing else is called.
func TestNVMLMissingLibrary(t *testing.T) {
	_, err := openNVML(NVMLOptions{LibraryPath: filepath.Join(t.TempDir(), "libnvidia-ml.so.1")})
	if !errors.Is(err, ErrNVMLUnavailable) || !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") || !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Fatalf("err = %v", err)
	}
}

// The claim end to end: a CGO_ENABLED=0 build of llmprof records
// NVML through the fake library. Building the binary in that configuration
// takes minutes on a cold cache, so it runs with LLMPROF_LONG=1 (CI); the
// tests above cover the same binding in the plain run, and
// `CGO_ENABLED=0 go test ./record -run NVMLFake` runs them without cgo.
func TestNoCgoBinaryRecordsNVML(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("builds llmprof with CGO_ENABLED=0 (minutes cold); set LLMPROF_LONG=1")
	}
	so := buildFakeNVML(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "llmprof")
	build := exec.Command("go", "build", "-o", bin, "./cmd/llmprof")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./cmd/llmprof: %v\n%s", err, out)
	}
	capture := filepath.Join(dir, "run.llmprof")
	out, err := exec.Command(bin, "record", "-o", capture, "--nvml-lib", so, "--nvml-interval", "10ms", "--", "sh", "-c", "sleep 0.3").CombinedOutput()
	if err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	c, err := OpenCapture(capture)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Manifest.NVML.Available || c.Manifest.NVML.DriverVersion != "999.88.77" || len(c.Manifest.GPUs) != 2 {
		t.Fatalf("manifest nvml %+v\n%s", c.Manifest.NVML, out)
	}
	var rows int
	if _, err := ReadTable(c, func(d *DeviceSample) error {
		rows++
		if *d.UtilGPUPct != 77 || *d.MemClockMHz != 3201 {
			t.Errorf("device row %+v", d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if rows < 4 {
		t.Fatalf("%d device rows", rows)
	}
}
