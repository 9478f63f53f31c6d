// Package memlimit is llmprof's memory budget (--memory-limit): the soft
// limit on the Go heap that every command runs under, taken from the flag, or
// from GOMEMLIMIT, or by default from the memory this process may use (the
// container's cgroup limit or the machine's RAM).
//
// Without a limit Go's collector lets the heap grow to twice what was live
// after the last collection (GOGC=100), so an analysis whose live data
// needs 6 GB asks for 12 GB, and on a 16 GB laptop or a CI runner with a
// cgroup limit it is killed. Under a limit the collector runs more often as
// the heap nears it instead (the runtime's soft memory limit,
// runtime/debug.SetMemoryLimit); it cannot make the live data smaller, and
// when the live data itself passes the limit the runtime caps the
// collector at half the CPU rather than thrash, and the process goes over
// (cmd/llmprof then says so).
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// DefaultPercent is the share of the usable memory (Usable) that the
// default limit is: room is left for the page cache of the inputs, which
// llmprof reads through it, and for the process's memory that is not the
// Go heap (SQLite's page cache, thread stacks, the binary).
const DefaultPercent = 75

// Limit is a parsed --memory-limit: bytes, a percentage of the usable
// memory, or none.
type Limit struct {
	Bytes   int64   // > 0: this many bytes
	Percent float64 // > 0: this share of Usable
	Off     bool    // no limit (0, "off", "none")
}

// Parse reads a memory size: a number of bytes with an optional unit (B, K/KB,
// M/MB, G/GB, T/TB in powers of 1000; KiB, MiB, GiB, TiB in powers of
// 1024; case does not matter), a percentage of the usable memory ("60%"),
// or 0, "off" or "none" for no limit.
func Parse(s string) (Limit, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "0", "off", "none":
		return Limit{Off: true}, nil
	case "":
		return Limit{}, errors.New("empty memory size")
	}
	if p, ok := strings.CutSuffix(t, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0 && v <= 100) {
			return Limit{}, fmt.Errorf("memory size %q: a percentage is above 0 and at most 100", s)
		}
		return Limit{Percent: v}, nil
	}
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return Limit{}, fmt.Errorf("memory size %q: want a number with an optional unit, e.g. 4GiB, 512MB or 60%%", s)
	}
	mult, ok := units[unit]
	if !ok {
		return Limit{}, fmt.Errorf("memory size %q: unknown unit %q (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, t[i:])
	}
	b := v * mult
	if b == 0 { // "0B", "0.0": none, as "0"
		return Limit{Off: true}, nil
	}
	if b < 1 || b > math.MaxInt64/2 {
		return Limit{}, fmt.Errorf("memory size %q is out of range", s)
	}
	return Limit{Bytes: int64(b)}, nil
}

var units = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40,
}

// String writes the limit as Parse reads it.
func (l Limit) String() string {
	switch {
	case l.Off:
		return "off"
	case l.Percent > 0:
		return strconv.FormatFloat(l.Percent, 'f', -1, 64) + "%"
	case l.Bytes > 0:
		return humanize.IBytes(uint64(l.Bytes))
	}
	return ""
}

// Usable is the memory this process may use: the smallest of the cgroup's
// limit (v2 memory.max, v1 memory.limit_in_bytes, of the process's own
// cgroup) and the machine's RAM (/proc/meminfo MemTotal), read from fsys
// (the root of the file system; os.DirFS("/") in use). where names what
// bounded it. ok is false when neither could be read (not Linux).
func Usable(fsys fs.FS) (bytes int64, where string, ok bool) {
	if total, err := memTotal(fsys); err == nil && total > 0 {
		bytes, where, ok = total, "RAM", true
	}
	if lim, err := cgroupLimit(fsys); err == nil && lim > 0 && (!ok || lim < bytes) {
		bytes, where, ok = lim, "cgroup limit", true
	}
	return bytes, where, ok
}

// memTotal reads MemTotal from /proc/meminfo (in kB there).
func memTotal(fsys fs.FS) (int64, error) {
	b, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}

// cgroupLimit reads the memory limit that binds the process's own cgroup:
// the smallest limit of that cgroup and of every ancestor (a container's
// entrypoint may sit in a child cgroup with no limit of its own, a job in a
// systemd scope under a limited slice) — v2's memory.max under the unified
// hierarchy's path ("0::/path" in /proc/self/cgroup), else v1's
// memory.limit_in_bytes under the memory controller's path. Inside a cgroup
// namespace the process's path may not exist under the mount, whose root is
// then its own cgroup: the levels that exist are read. No limit ("max", or
// v1's page-rounded 2⁶³) is 0.
func cgroupLimit(fsys fs.FS) (int64, error) {
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, err
	}
	var v2, v1 string
	haveV2, haveV1 := false, false
	for line := range strings.SplitSeq(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, haveV2 = parts[2], true
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			v1, haveV1 = parts[2], true
		}
	}
	if haveV2 {
		if v, ok, err := hierarchyLimit(fsys, "sys/fs/cgroup", v2, "memory.max"); ok || err != nil {
			return v, err
		}
	}
	if haveV1 {
		if v, ok, err := hierarchyLimit(fsys, "sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"); ok || err != nil {
			return v, err
		}
	}
	return 0, errors.New("no memory cgroup")
}

// hierarchyLimit is the smallest limit in file at each level of path under
// mount, from the cgroup itself up to the mount's root (0: none); ok is
// false when no level has the file.
func hierarchyLimit(fsys fs.FS, mount, path, file string) (limit int64, ok bool, err error) {
	levels := strings.Split(cleanJoin(path), "/")
	if levels[0] == "" {
		levels = nil
	}
	for n := len(levels); n >= 0; n-- {
		b, rerr := fs.ReadFile(fsys, cleanJoin(mount, strings.Join(levels[:n], "/"), file))
		if rerr != nil {
			continue
		}
		ok = true
		s := strings.TrimSpace(string(b))
		if s == "max" {
			continue
		}
		v, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil {
			return 0, true, fmt.Errorf("%s: %w", cleanJoin(mount, strings.Join(levels[:n], "/"), file), perr)
		}
		if v >= math.MaxInt64/2 { // v1's "no limit"
			continue
		}
		if limit == 0 || v < limit {
			limit = v
		}
	}
	return limit, ok, nil
}

// cleanJoin joins fs.FS path elements, dropping the cgroup path's leading
// slash and any ".." (a cgroup path never needs one; fs.FS refuses them).
func cleanJoin(parts ...string) string {
	var out []string
	for _, p := range parts {
		for e := range strings.SplitSeq(p, "/") {
			if e != "" && e != "." && e != ".." {
				out = append(out, e)
			}
		}
	}
	return strings.Join(out, "/")
}

// Setting is the limit a command runs under and where it came from.
type Setting struct {
	Bytes int64 // 0: none
	// From says where the figure came from, for --help and the progress
	// line: "--memory-limit", "GOMEMLIMIT", "75% of RAM", …
	From string
}

// Resolve chooses the limit: the flag when given (set), else GOMEMLIMIT
// when the environment has it (the runtime already applies it), else
// DefaultPercent of the usable memory; none when that cannot be read.
func Resolve(flag Limit, set bool, getenv func(string) string, fsys fs.FS) (Setting, error) {
	if !set {
		if getenv("GOMEMLIMIT") != "" {
			// The runtime read it at start ("off" is no limit).
			lim := debug.SetMemoryLimit(-1)
			if lim == math.MaxInt64 {
				lim = 0
			}
			return Setting{Bytes: lim, From: "GOMEMLIMIT"}, nil
		}
		flag = Limit{Percent: DefaultPercent}
	}
	switch {
	case flag.Off:
		return Setting{From: "--memory-limit"}, nil
	case flag.Bytes > 0:
		return Setting{Bytes: flag.Bytes, From: "--memory-limit"}, nil
	}
	usable, where, ok := Usable(fsys)
	if !ok {
		if set {
			return Setting{}, fmt.Errorf("--memory-limit %s: the usable memory cannot be read here (no /proc/meminfo); give a size such as 4GiB", flag)
		}
		return Setting{From: "none (the usable memory cannot be read)"}, nil
	}
	b := int64(float64(usable) * flag.Percent / 100)
	from := strconv.FormatFloat(flag.Percent, 'f', -1, 64) + "% of " + humanize.IBytes(uint64(usable)) + " " + where
	if set {
		from = "--memory-limit " + from
	}
	return Setting{Bytes: b, From: from}, nil
}

// Apply sets the runtime's soft memory limit (none: no limit) and returns
// the one it replaces.
func (s Setting) Apply() int64 {
	if s.Bytes <= 0 {
		return debug.SetMemoryLimit(math.MaxInt64)
	}
	return debug.SetMemoryLimit(s.Bytes)
}

// System is the file system Usable reads in use.
func System() fs.FS { return os.DirFS("/") }
