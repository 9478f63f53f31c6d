package record

import "golang.org/x/sys/unix"

// clockTries is how many bracketed reads readClockPair makes; it keeps the
// tightest. A read can be stretched by preemption or an interrupt between
// the two realtime reads, and a few tries almost always include a clean one.
const clockTries = 5

// readClockPair reads the monotonic, boottime and raw clocks between two
// realtime reads and keeps the tightest bracket of clockTries attempts.
// Why four clocks: OTLP spans are realtime, vLLM's span events carry
// monotonic times, nsys builds on CLOCK_MONOTONIC_RAW, and boottime keeps
// counting across suspend (docs/record.md, "Clock anchors").
func readClockPair(label string) ClockPair {
	var best ClockPair
	for i := range clockTries {
		var p ClockPair
		p.Label = label
		p.RealLoNs = clockNs(unix.CLOCK_REALTIME)
		p.MonoNs = clockNs(unix.CLOCK_MONOTONIC)
		p.BootNs = clockNs(clockBoottime)
		p.MonoRawNs = clockNs(clockMonotonicRaw)
		p.RealHiNs = clockNs(unix.CLOCK_REALTIME)
		if i == 0 || p.RealHiNs-p.RealLoNs < best.RealHiNs-best.RealLoNs {
			best = p
		}
	}
	return best
}

// monoNow reads CLOCK_MONOTONIC, the clock every capture row starts with.
func monoNow() int64 { return clockNs(unix.CLOCK_MONOTONIC) }

// realNow reads CLOCK_REALTIME.
func realNow() int64 { return clockNs(unix.CLOCK_REALTIME) }

func clockNs(id int32) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(id, &ts); err != nil {
		// The clocks used here exist on every kernel llmprof supports;
		// failing to read one is a broken invariant, not bad input.
		panic("record: clock_gettime: " + err.Error())
	}
	return ts.Nano()
}
