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
		if st := procStatus(b); st.rss > 0 {
			return st.rss, st.hwm
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return s[0].Value.Uint64(), 0
	}
	return 0, 0
}

// FileResident is the process's resident memory that is not anonymous:
// file-backed and shared pages (RssFile + RssShmem of /proc/self/status),
// the binary's, the libraries' and any mapped file's. 0 where there is no
// /proc/self/status.
func FileResident() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	st := procStatus(b)
	return st.file + st.shmem
}

// status is what procStatus reads, in bytes.
type status struct{ rss, hwm, file, shmem uint64 }

// procStatus reads the sizes ("VmHWM:   123456 kB") of the text of
// /proc/self/status that Resident and FileResident report.
func procStatus(b []byte) status {
	var st status
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
			st.rss = v << 10
		case "VmHWM:":
			st.hwm = v << 10
		case "RssFile:":
			st.file = v << 10
		case "RssShmem:":
			st.shmem = v << 10
		}
	}
	return st
}
