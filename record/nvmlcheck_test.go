package record

import (
	"math"
	"strings"
	"testing"
	"time"
)

// nvmlCapture writes a 2-second capture of one GPU: deviceRows device polls
// evenly spread, and two drains whose newest NVML timestamp is stamp(the
// drain's monotonic time).
func nvmlCapture(t *testing.T, deviceRows int, stamp func(mono int64) uint64) *Capture {
	t.Helper()
	const (
		real0 = int64(1_796_000_000_000_000_000)
		mono0 = int64(5_000_000_000)
		span  = int64(2 * time.Second)
	)
	b := newCaptureBuilder(t, StatusComplete)
	b.m.Sampling = SamplingInfo{DeviceIntervalMs: 100, DrainIntervalMs: 1000}
	b.m.Clock.Start = &ClockSnapshot{RealtimeNs: real0, MonotonicNs: mono0}
	b.m.Clock.End = &ClockSnapshot{RealtimeNs: real0 + span, MonotonicNs: mono0 + span}
	writeRows(b, clockSchema,
		ClockPair{Label: "start", RealLoNs: real0 - 100, MonoNs: mono0, RealHiNs: real0 + 100},
		ClockPair{Label: "end", RealLoNs: real0 + span - 100, MonoNs: mono0 + span, RealHiNs: real0 + span + 100})
	var dev []DeviceSample
	for i := range deviceRows {
		dev = append(dev, DeviceSample{MonoNs: mono0 + int64(i)*span/int64(deviceRows), GPU: 0, PollLatencyNs: int32(1+i%2) * 1e6})
	}
	writeRows(b, deviceSchema, dev...)
	var buf []BufferedSample
	var proc []ProcessSample
	for _, drain := range []int64{mono0 + span/2, mono0 + span} {
		for _, typ := range []uint8{0, 1} {
			buf = append(buf, BufferedSample{MonoNs: drain, SamplingType: typ, NVMLTimestampUs: stamp(drain) - 50_000},
				BufferedSample{MonoNs: drain, SamplingType: typ, NVMLTimestampUs: stamp(drain)})
		}
		proc = append(proc, ProcessSample{MonoNs: drain, Pid: 1, Source: "utilization", NVMLTimestampUs: ptr(stamp(drain))})
	}
	writeRows(b, bufferedSchema, buf...)
	writeRows(b, processSchema, proc...)
	writeRows(b, gpmSchema, GPMSample{T0MonoNs: mono0, T1MonoNs: mono0 + 1, MetricID: 2, Value: 50})
	c, err := OpenCapture(b.finish())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// realtimeStamp is NVML stamping with CLOCK_REALTIME µs, 200 ms before the
// drain (the capture's clocks: realtime = monotonic + offset).
func realtimeStamp(mono int64) uint64 {
	return uint64((mono-5_000_000_000+1_796_000_000_000_000_000)/1000) - 200_000
}

func TestCheckNVML(t *testing.T) {
	t.Run("healthy", func(t *testing.T) {
		r, err := CheckNVML(nvmlCapture(t, 20, realtimeStamp))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Problems) != 0 {
			t.Fatalf("problems on a healthy capture: %q", r.Problems)
		}
		if r.Seconds != 2 || r.Device.Rows != 20 || r.Device.PerGPUPerSecond != 10 || r.GPM.Rows != 1 {
			t.Errorf("rates: %+v, device %+v, gpm %+v", r.Seconds, r.Device, r.GPM)
		}
		if len(r.Buffered) != 2 || r.Buffered[0].Rows != 4 {
			t.Errorf("buffered %+v", r.Buffered)
		}
		// Drains at 1 s and 2 s, newest sample 200 ms before each.
		if r.BufferedLag.N != 2 || math.Abs(r.BufferedLag.P50Ms-200) > 0.01 || math.Abs(r.ProcessLag.MaxMs-200) > 0.01 {
			t.Errorf("lags %+v %+v", r.BufferedLag, r.ProcessLag)
		}
		if r.PollLatencyP50Ms != 1.5 || r.PollLatencyP99Ms < 1.9 {
			t.Errorf("poll latency p50 %g p99 %g", r.PollLatencyP50Ms, r.PollLatencyP99Ms)
		}
	})
	t.Run("NVML stamps with another clock", func(t *testing.T) {
		monoStamp := func(mono int64) uint64 { return uint64(mono / 1000) }
		r, err := CheckNVML(nvmlCapture(t, 20, monoStamp))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Problems) != 2 || !strings.Contains(r.Problems[0], "not CLOCK_REALTIME") {
			t.Fatalf("problems %q", r.Problems)
		}
	})
	t.Run("NVML stamps from the future", func(t *testing.T) {
		ahead := func(mono int64) uint64 { return realtimeStamp(mono) + 1_000_000 }
		r, _ := CheckNVML(nvmlCapture(t, 20, ahead))
		if len(r.Problems) != 2 {
			t.Fatalf("problems %q", r.Problems)
		}
	})
	t.Run("device rows below the cadence", func(t *testing.T) {
		r, _ := CheckNVML(nvmlCapture(t, 5, realtimeStamp))
		if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "device rows: 2.5/s per GPU, configured 10.0/s") {
			t.Fatalf("problems %q", r.Problems)
		}
	})
	t.Run("no NVML", func(t *testing.T) {
		b := newCaptureBuilder(t, StatusComplete)
		b.m.NVML = NVMLInfo{Reason: "nvml init: ERROR_LIBRARY_NOT_FOUND"}
		c, _ := OpenCapture(b.finish())
		r, err := CheckNVML(c)
		if err != nil || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "ERROR_LIBRARY_NOT_FOUND") {
			t.Fatalf("%+v %v", r, err)
		}
	})
}
