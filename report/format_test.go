package report

import "testing"

// Totals under a millisecond print in µs (a 136 µs kernel total read "0s").
func TestFmtSecondsBelowAMillisecond(t *testing.T) {
	for s, want := range map[float64]string{
		2.5: "2.5s", 0.0123456: "12ms", 0.000136: "136µs", 0.0000004: "400ns",
		-0.000136: "-136µs", 0: "0s", 0.0009996: "1ms",
	} {
		if got := fmtSeconds(s); got != want {
			t.Errorf("fmtSeconds(%v) = %q, want %q", s, got, want)
		}
	}
}
