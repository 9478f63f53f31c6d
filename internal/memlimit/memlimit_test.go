package memlimit

import (
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want Limit
		err  string
	}{
		{"4GiB", Limit{Bytes: 4 << 30}, ""},
		{"4gib", Limit{Bytes: 4 << 30}, ""},
		{"512MB", Limit{Bytes: 512e6}, ""},
		{"1.5G", Limit{Bytes: 1.5e9}, ""},
		{"2 GiB", Limit{Bytes: 2 << 30}, ""},
		{"1048576", Limit{Bytes: 1 << 20}, ""},
		{"100KiB", Limit{Bytes: 100 << 10}, ""},
		{"60%", Limit{Percent: 60}, ""},
		{" 12.5 % ", Limit{Percent: 12.5}, ""},
		{"0", Limit{Off: true}, ""},
		{"off", Limit{Off: true}, ""},
		{"None", Limit{Off: true}, ""},
		{"0B", Limit{Off: true}, ""},
		{"0.0", Limit{Off: true}, ""},
		{"", Limit{}, "empty"},
		{"10Q", Limit{}, `unknown unit "Q"`},
		{"GiB", Limit{}, "want a number"},
		{"-4GiB", Limit{}, "want a number"},
		{"0%", Limit{}, "percentage"},
		{"150%", Limit{}, "percentage"},
		{"x%", Limit{}, "percentage"},
		{"0.1B", Limit{}, "out of range"},
		{"99999999TiB", Limit{}, "out of range"},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q) = %+v, %v; want an error with %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := Parse(got.String()); err != nil || back != got && !(got.Bytes > 0 && back.Bytes > 0) {
			t.Errorf("Parse(%q).String() = %q does not read back: %+v, %v", c.in, got.String(), back, err)
		}
	}
}

const meminfo = "MemTotal:       16384000 kB\nMemFree:         1000 kB\n"

// TestUsable: the smaller of the process's cgroup limit and the RAM, under
// cgroup v2, v1 and a hybrid of both, with the cgroup's own path or only the
// namespace's root visible, and no limit where the cgroup sets none.
func TestUsable(t *testing.T) {
	ram := int64(16384000) * 1024
	cases := []struct {
		name  string
		files map[string]string
		want  int64
		where string
		ok    bool
	}{
		{"v2 own path", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/user.slice/job\n",
			"sys/fs/cgroup/user.slice/job/memory.max": "8589934592\n"}, 8 << 30, "cgroup limit", true},
		{"v2 root in a namespace", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/\n",
			"sys/fs/cgroup/memory.max": "2147483648\n"}, 2 << 30, "cgroup limit", true},
		{"v2 max", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/x\n",
			"sys/fs/cgroup/x/memory.max": "max\n"}, ram, "RAM", true},
		{"v2 above RAM", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/x\n",
			"sys/fs/cgroup/x/memory.max": "99999999999999\n"}, ram, "RAM", true},
		{"v1 own path", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "5:cpu,cpuacct:/a\n4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "1073741824\n"}, 1 << 30, "cgroup limit", true},
		{"v1 no limit", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, ram, "RAM", true},
		{"hybrid: v1 holds the limit, own path hidden", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "4:memory:/process_api/x\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "4294967296\n"}, 4 << 30, "cgroup limit", true},
		{"a path with dot-dots stays inside", map[string]string{
			"proc/meminfo": meminfo, "proc/self/cgroup": "0::/../../x\n",
			"sys/fs/cgroup/x/memory.max": "1073741824\n"}, 1 << 30, "cgroup limit", true},
		{"no cgroup", map[string]string{"proc/meminfo": meminfo}, ram, "RAM", true},
		{"cgroup only", map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "1000000\n"}, 1e6, "cgroup limit", true},
		{"nothing readable", map[string]string{}, 0, "", false},
		{"garbage", map[string]string{"proc/meminfo": "MemTotal: lots kB\n", "proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "many\n"}, 0, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for p, s := range c.files {
				fsys[p] = &fstest.MapFile{Data: []byte(s)}
			}
			got, where, ok := Usable(fsys)
			if got != c.want || where != c.where || ok != c.ok {
				t.Fatalf("Usable = %d, %q, %v; want %d, %q, %v", got, where, ok, c.want, c.where, c.ok)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	fsys := fstest.MapFS{"proc/meminfo": &fstest.MapFile{Data: []byte(meminfo)}}
	ram := int64(16384000) * 1024
	noEnv := func(string) string { return "" }
	cases := []struct {
		name   string
		flag   Limit
		set    bool
		getenv func(string) string
		fsys   fstest.MapFS
		want   int64
		from   string
		err    string
	}{
		{"default", Limit{}, false, noEnv, fsys, ram * 3 / 4, "75% of 16 GiB RAM", ""},
		{"bytes", Limit{Bytes: 1 << 30}, true, noEnv, fsys, 1 << 30, "--memory-limit", ""},
		{"percent", Limit{Percent: 50}, true, noEnv, fsys, ram / 2, "--memory-limit 50% of 16 GiB RAM", ""},
		{"off", Limit{Off: true}, true, noEnv, fsys, 0, "--memory-limit", ""},
		{"flag beats GOMEMLIMIT", Limit{Bytes: 5e6}, true, func(string) string { return "1GiB" }, fsys, 5e6, "--memory-limit", ""},
		{"default unreadable", Limit{}, false, noEnv, fstest.MapFS{}, 0, "none (the usable memory cannot be read)", ""},
		{"percent unreadable", Limit{Percent: 50}, true, noEnv, fstest.MapFS{}, 0, "", "cannot be read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(c.flag, c.set, c.getenv, c.fsys)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Resolve = %+v, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || got.Bytes != c.want || got.From != c.from {
				t.Fatalf("Resolve = %+v, %v; want %d from %q", got, err, c.want, c.from)
			}
		})
	}
	// GOMEMLIMIT set and no flag: the runtime's own limit stands.
	old := debug.SetMemoryLimit(3 << 30)
	defer debug.SetMemoryLimit(old)
	got, err := Resolve(Limit{}, false, func(k string) string {
		if k == "GOMEMLIMIT" {
			return "3GiB"
		}
		return ""
	}, fsys)
	if err != nil || got.Bytes != 3<<30 || got.From != "GOMEMLIMIT" {
		t.Fatalf("Resolve with GOMEMLIMIT = %+v, %v", got, err)
	}
}

func TestApply(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	prev := Setting{Bytes: 123 << 20}.Apply()
	if prev != old {
		t.Fatalf("Apply returned %d, want the limit before, %d", prev, old)
	}
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Fatalf("limit %d after Apply, want %d", got, 123<<20)
	}
	Setting{}.Apply()
	if got := debug.SetMemoryLimit(-1); got != 1<<63-1 {
		t.Fatalf("limit %d after Apply of none, want no limit", got)
	}
}

// TestCgroupV2AncestorLimit: under cgroup v2 the limit that binds a
// process is the smallest memory.max of its cgroup and every ancestor. A
// container whose entrypoint moved itself into a child cgroup (/init, as
// systemd and docker-in-docker images do to delegate controllers) has
// "max" in its own memory.max and the container's limit one level up.
// (Found in review: only the own file was read, and the default budget was
// 75% of the host's RAM instead of the container's 2 GiB.)
func TestCgroupV2AncestorLimit(t *testing.T) {
	fsys := fstest.MapFS{
		"proc/meminfo":                  {Data: []byte(meminfo)},
		"proc/self/cgroup":              {Data: []byte("0::/init\n")},
		"sys/fs/cgroup/memory.max":      {Data: []byte("2147483648\n")},
		"sys/fs/cgroup/init/memory.max": {Data: []byte("max\n")},
	}
	got, where, ok := Usable(fsys)
	if !ok || got != 2<<30 || where != "cgroup limit" {
		t.Fatalf("Usable = %d, %q, %v; want the parent cgroup's 2 GiB limit", got, where, ok)
	}
	// The same with the limit two levels up (a systemd slice above a scope).
	fsys = fstest.MapFS{
		"proc/meminfo":                                   {Data: []byte(meminfo)},
		"proc/self/cgroup":                               {Data: []byte("0::/batch.slice/job.scope\n")},
		"sys/fs/cgroup/batch.slice/memory.max":           {Data: []byte("1073741824\n")},
		"sys/fs/cgroup/batch.slice/job.scope/memory.max": {Data: []byte("max\n")},
	}
	got, where, ok = Usable(fsys)
	if !ok || got != 1<<30 || where != "cgroup limit" {
		t.Fatalf("Usable = %d, %q, %v; want the slice's 1 GiB limit", got, where, ok)
	}
}

// TestResolveGOMEMLIMITOff: GOMEMLIMIT=off is the user asking the runtime
// for no limit (the --memory-limit help promises "default GOMEMLIMIT when
// set"); found in review applying the 75% default instead.
func TestResolveGOMEMLIMITOff(t *testing.T) {
	fsys := fstest.MapFS{"proc/meminfo": {Data: []byte(meminfo)}}
	got, err := Resolve(Limit{}, false, func(k string) string {
		if k == "GOMEMLIMIT" {
			return "off"
		}
		return ""
	}, fsys)
	if err != nil || got.Bytes != 0 {
		t.Fatalf("Resolve with GOMEMLIMIT=off = %+v, %v; want no limit", got, err)
	}
}
