package proc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCPUSecondsCountsWork(t *testing.T) {
	before := CPUSeconds()
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	if after := CPUSeconds(); after <= before {
		t.Fatalf("CPU time %v → %v after a busy loop (%d)", before, after, x)
	}
}

func TestPeakRSSHoldsWhatWasTouched(t *testing.T) {
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = byte(i)
	}
	peak, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if peak < int64(len(b)) {
		t.Fatalf("peak RSS %d bytes after touching %d", peak, len(b))
	}
}

func TestStartCPUProfile(t *testing.T) {
	stop, err := StartCPUProfile("")
	if err != nil || stop() != nil {
		t.Fatalf("no path: %v", err)
	}
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	if stop, err = StartCPUProfile(path); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("profile %s: %v", path, err)
	}
	if _, err := StartCPUProfile(filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil {
		t.Fatal("a profile in a missing directory started")
	}
}
