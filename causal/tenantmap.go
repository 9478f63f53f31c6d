package causal

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// Via says how a process was assigned to its tenant. The report shows it,
// because a tenant named after a process is a weaker claim than one the
// server declared.
type Via string

// The mapping methods, strongest first.
const (
	// ViaOverride: the user said so (--tenant-pid).
	ViaOverride Via = "override"
	// ViaRequests: the process serves requests (its OTLP resource's
	// process.pid, or the engine of their steps) of this tenant; one serving
	// several tenants is a shared source.
	ViaRequests Via = "requests"
	// ViaResource: an OTLP resource carried process.pid and a tenant key.
	ViaResource Via = "resource"
	// ViaProcessName: the process's name in an nsys export.
	ViaProcessName Via = "process-name"
	// ViaMIGInstance: the MIG GPU instance its samples came from.
	ViaMIGInstance Via = "mig-instance"
)

// DefaultTenantKeys are the resource attributes that name a process's tenant,
// in order (docs/design.md §5).
var DefaultTenantKeys = ingest.ResourceTenantKeys

// MapOptions configures MapTenants.
type MapOptions struct {
	// Override assigns processes to tenants outright.
	Override map[uint32]string
	// Keys are the resource attributes that name the tenant; nil means
	// DefaultTenantKeys.
	Keys []string
	// NoMIG turns off the last resort of naming a tenant after its MIG
	// instance.
	NoMIG bool
	// Served is, per pid, the tenants of the requests the process serves
	// (ServedTenants): the strongest evidence after Override, so that a
	// process's tenant is named as its requests are.
	Served map[uint32][]string
}

// PidTenant is one process's assignment.
type PidTenant struct {
	Pid    uint32 `json:"pid"`
	Tenant string `json:"tenant"`
	Via    Via    `json:"via"`
	// Key is the resource attribute that named the tenant (ViaResource).
	Key string `json:"key,omitempty"`
	// Serves lists the tenants of a shared source (a process serving
	// requests of several tenants), whose Tenant is SharedName(Serves).
	Serves []string `json:"serves,omitempty"`
	// Device and Instance place the process on a GPU and MIG GPU instance
	// (from its samples and kernels); -1 when unknown.
	Device   int16 `json:"device"`
	Instance int16 `json:"instance"`
}

// TenantMap assigns processes (pids) to tenants.
type TenantMap struct {
	ByPid map[uint32]string `json:"-"`
	// Entries lists every assignment, by pid.
	Entries []PidTenant `json:"entries"`
	// Notes reports conflicts and processes left without a tenant.
	Notes []string `json:"notes,omitempty"`
}

// NewTenantMap returns a map from explicit assignments (ViaOverride).
func NewTenantMap(byPid map[uint32]string) *TenantMap {
	m := &TenantMap{ByPid: map[uint32]string{}}
	for pid, name := range byPid {
		m.set(PidTenant{Pid: pid, Tenant: name, Via: ViaOverride, Device: -1, Instance: -1})
	}
	m.sortEntries()
	return m
}

func (m *TenantMap) set(e PidTenant) {
	m.ByPid[e.Pid] = e.Tenant
	m.Entries = append(m.Entries, e)
}

func (m *TenantMap) sortEntries() {
	slices.SortFunc(m.Entries, func(a, b PidTenant) int { return cmp.Compare(a.Pid, b.Pid) })
}

// Tenants returns the tenant names, sorted, each once.
func (m *TenantMap) Tenants() []string {
	var names []string
	for _, e := range m.Entries {
		names = append(names, e.Tenant)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Methods counts the assignments by method, strongest first, for the report
// line "tenants from: 3 by resource, 1 by process-name".
func (m *TenantMap) Methods() []ViaCount {
	order := []Via{ViaOverride, ViaRequests, ViaResource, ViaProcessName, ViaMIGInstance}
	var out []ViaCount
	for _, v := range order {
		n := 0
		for _, e := range m.Entries {
			if e.Via == v {
				n++
			}
		}
		if n > 0 {
			out = append(out, ViaCount{Via: v, Processes: n})
		}
	}
	return out
}

// ViaCount is how many processes one method assigned.
type ViaCount struct {
	Via       Via `json:"via"`
	Processes int `json:"processes"`
}

// MapTenants assigns the processes of a trace to tenants, trying for each
// process, in order: opts.Override; the tenants of the requests it serves
// (opts.Served; several make it a shared source); an OTLP resource with process.pid and one
// of opts.Keys; the process's name in an nsys export (processes of one name
// count as one tenant, so a server's worker processes stay together); and,
// unless opts.NoMIG, the MIG instance its samples came from. Only processes
// that ran GPU work or have samples are mapped by name or instance, so helper
// processes do not become tenants.
func MapTenants(t *ingest.Trace, opts MapOptions) *TenantMap {
	m := &TenantMap{ByPid: map[uint32]string{}}
	keys := opts.Keys
	if keys == nil {
		keys = DefaultTenantKeys
	}
	place := placements(t)
	where := func(pid uint32) (int16, int16) {
		if p, ok := place[pid]; ok {
			return p.device, p.instance
		}
		return -1, -1
	}
	add := func(e PidTenant) {
		if prev, ok := m.ByPid[e.Pid]; ok {
			weak := e.Via == ViaProcessName || e.Via == ViaMIGInstance || (viaOf(m, e.Pid) == ViaRequests && e.Key == "service.name")
			if prev != e.Tenant && !weak {
				m.Notes = append(m.Notes, fmt.Sprintf("pid %d is tenant %q by %s and %q by %s; kept %q", e.Pid, prev, viaOf(m, e.Pid), e.Tenant, e.Via, prev))
			}
			return
		}
		e.Device, e.Instance = where(e.Pid)
		m.set(e)
	}

	overrides := make([]uint32, 0, len(opts.Override))
	for pid := range opts.Override {
		overrides = append(overrides, pid)
	}
	slices.Sort(overrides)
	for _, pid := range overrides {
		add(PidTenant{Pid: pid, Tenant: opts.Override[pid], Via: ViaOverride})
	}

	served := make([]uint32, 0, len(opts.Served))
	for pid := range opts.Served {
		served = append(served, pid)
	}
	slices.Sort(served)
	for _, pid := range served {
		names := slices.Clone(opts.Served[pid])
		slices.Sort(names)
		names = slices.Compact(names)
		switch len(names) {
		case 0:
		case 1:
			add(PidTenant{Pid: pid, Tenant: names[0], Via: ViaRequests})
		default:
			add(PidTenant{Pid: pid, Tenant: SharedName(names), Via: ViaRequests, Serves: names})
		}
	}

	for _, res := range t.Resources {
		v, ok := t.Attr(res.Attrs, "process.pid")
		if !ok {
			continue
		}
		pid, ok := pidValue(t, v)
		if !ok {
			continue
		}
		for _, key := range keys {
			if name, ok := t.AttrString(res.Attrs, key); ok && name != "" {
				add(PidTenant{Pid: pid, Tenant: name, Via: ViaResource, Key: key})
				break
			}
		}
	}

	active := func(pid uint32) bool { _, ok := place[pid]; return ok }
	byName := map[string][]uint32{}
	for _, p := range t.Processes {
		if p.Pid == 0 || !active(p.Pid) || p.Name == "" {
			continue
		}
		if _, done := m.ByPid[p.Pid]; done {
			continue
		}
		name := processName(p.Name)
		if !slices.Contains(byName[name], p.Pid) {
			byName[name] = append(byName[name], p.Pid)
		}
		add(PidTenant{Pid: p.Pid, Tenant: name, Via: ViaProcessName})
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if pids := byName[n]; len(pids) > 1 {
			slices.Sort(pids)
			m.Notes = append(m.Notes, fmt.Sprintf("process name %q covers %d pids (%s); they count as one tenant (assign them with --tenant-pid if not)", n, len(pids), joinPids(pids)))
		}
	}

	var orphans []uint32
	for pid, p := range place {
		if _, done := m.ByPid[pid]; done {
			continue
		}
		if !opts.NoMIG && p.instance >= 0 {
			add(PidTenant{Pid: pid, Tenant: fmt.Sprintf("gpu%d-mig%d", p.device, p.instance), Via: ViaMIGInstance})
			continue
		}
		orphans = append(orphans, pid)
	}
	if len(orphans) > 0 {
		slices.Sort(orphans)
		m.Notes = append(m.Notes, fmt.Sprintf("%d processes with GPU work have no tenant (pids %s)", len(orphans), joinPids(orphans)))
	}
	m.sortEntries()
	return m
}

func viaOf(m *TenantMap, pid uint32) Via {
	for _, e := range m.Entries {
		if e.Pid == pid {
			return e.Via
		}
	}
	return ""
}

// pidValue reads a process.pid attribute, an int or a decimal string.
func pidValue(t *ingest.Trace, v ingest.Value) (uint32, bool) {
	switch v.Kind() {
	case ingest.KindInt:
		n := v.Int()
		return uint32(n), n > 0 && n <= 1<<32-1
	case ingest.KindString:
		n, err := strconv.ParseUint(strings.TrimSpace(t.Str(v.Str())), 10, 32)
		return uint32(n), err == nil && n > 0
	case ingest.KindDouble:
		f := v.Double()
		return uint32(f), f > 0 && f <= 1<<32-1 && f == float64(uint32(f))
	}
	return 0, false
}

// processName shortens an nsys process name (often a full command path) to
// its executable's base name.
func processName(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '/'); i >= 0 && i < len(s)-1 {
		s = s[i+1:]
	}
	return s
}

func joinPids(pids []uint32) string {
	var b strings.Builder
	for i, p := range pids {
		if i == 8 {
			fmt.Fprintf(&b, ", … %d more", len(pids)-8)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatUint(uint64(p), 10))
	}
	return b.String()
}

type placement struct{ device, instance int16 }

// placements finds, for every process with GPU work or samples, the device
// and MIG instance it ran on (-1 when unknown).
func placements(t *ingest.Trace) map[uint32]placement {
	out := map[uint32]placement{}
	for i := range t.Samples {
		s := &t.Samples[i]
		if s.Pid == 0 {
			continue
		}
		p, ok := out[s.Pid]
		if !ok {
			p = placement{-1, -1}
		}
		if p.device < 0 {
			p.device = s.Device
		}
		if p.instance < 0 {
			p.instance = s.Instance
		}
		out[s.Pid] = p
	}
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		if o.Pid == 0 {
			continue
		}
		p, ok := out[o.Pid]
		if !ok {
			p = placement{-1, -1}
		}
		if p.device < 0 {
			p.device = o.Device
		}
		out[o.Pid] = p
	}
	return out
}
