package progress

import (
	"bufio"
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
)

// Resident is the process's resident memory now and at its peak, from
// /proc/self/status (VmRSS, VmHWM) where there is one; elsewhere the
// memory the Go runtime has mapped (runtime/metrics'
// /memory/classes/total:bytes), whose peak the Meter keeps itself.
func Resident() (cur, peak uint64) {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if cur, peak = procStatus(b); cur > 0 {
			return cur, peak
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return s[0].Value.Uint64(), 0
	}
	return 0, 0
}

// procStatus reads VmRSS and VmHWM ("VmHWM:   123456 kB") from the text of
// /proc/self/status.
func procStatus(b []byte) (rss, hwm uint64) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) != 3 || string(f[2]) != "kB" {
			continue
		}
		v, err := strconv.ParseUint(string(f[1]), 10, 64)
		if err != nil {
			continue
		}
		switch string(f[0]) {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm
}
