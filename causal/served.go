package causal

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
)

// SharedName labels a shared source: a process serving several tenants'
// requests, whose GPU work cannot be split between them. Past
// sharedNameTenants tenants it names the first ones and the count (an
// engine serving one tenant per user would otherwise be named by thousands
// of them); TenantMap.Members still lists them all.
func SharedName(tenants []string) string {
	if len(tenants) > sharedNameTenants {
		return fmt.Sprintf("%s+… (%d tenants, shared)", strings.Join(tenants[:sharedNameTenants-1], "+"), len(tenants))
	}
	return strings.Join(tenants, "+") + " (shared)"
}

// sharedNameTenants is the most tenants SharedName lists.
const sharedNameTenants = 4

// ServedTenants finds, for every process that serves requests, the tenants
// of those requests: the process.pid of the resource that emitted the
// request span, and the pid of the engine whose steps batched it. The
// tenant is the request's, as attribution named it (--tenant-key), so GPU
// work and requests carry the same names.
func ServedTenants(t *ingest.Trace, att *attribution.Result) map[uint32][]string {
	out := map[uint32][]string{}
	// Consecutive requests mostly repeat the pair just added (one engine's
	// steps, one resource's spans): that one is skipped without a lookup.
	var lastPid uint32
	var lastTenant string
	add := func(pid uint32, tenant string) {
		if pid == 0 || tenant == "" || (pid == lastPid && tenant == lastTenant) {
			return
		}
		lastPid, lastTenant = pid, tenant
		if !slices.Contains(out[pid], tenant) {
			out[pid] = append(out[pid], tenant)
		}
	}
	if att == nil {
		return out
	}
	// Each resource's pid is read once, not once a request: resourcePid[ri]
	// is pid+1, 0 while not yet read (a pid of 0 or none adds nothing).
	resourcePid := make([]int64, len(t.Resources))
	for i := range att.Requests {
		r := &att.Requests[i]
		if r.Span < 0 || r.Span >= len(t.Spans) {
			continue
		}
		ri := t.Spans[r.Span].Resource
		if ri < 0 || int(ri) >= len(t.Resources) {
			continue
		}
		if resourcePid[ri] == 0 {
			resourcePid[ri] = 1
			if v, ok := t.Attr(t.Resources[ri].Attrs, "process.pid"); ok {
				if pid, ok := pidValue(t, v); ok {
					resourcePid[ri] = int64(pid) + 1
				}
			}
		}
		add(uint32(resourcePid[ri]-1), att.Tenant(r))
	}
	for si := range att.Steps {
		s := &att.Steps[si]
		if s.Engine < 0 || s.Engine >= len(att.Engines) {
			continue
		}
		pid := att.Engines[s.Engine].Pid
		for _, ri := range s.Requests {
			if ri >= 0 && int(ri) < len(att.Requests) {
				add(pid, att.Tenant(&att.Requests[ri]))
			}
		}
	}
	for pid := range out {
		slices.Sort(out[pid])
	}
	return out
}

// Members are the tenants a mapped name stands for: a shared source's
// tenants, or the name itself.
func (m *TenantMap) Members(name string) []string {
	var out []string
	for _, e := range m.Entries {
		if e.Tenant == name && len(e.Serves) > 0 {
			out = append(out, e.Serves...)
		}
	}
	if len(out) == 0 {
		return []string{name}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// shareMembers reports whether two names stand for a common tenant (a
// shared source and one of its tenants): such a pair would test a tenant
// against itself.
func (m *TenantMap) shareMembers(a, b string) bool {
	if a == b {
		return true
	}
	mb := m.Members(b)
	for _, x := range m.Members(a) {
		if slices.Contains(mb, x) {
			return true
		}
	}
	return false
}
