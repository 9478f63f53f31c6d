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
// work and requests carry the same names. FromAttributionServed finds the
// same in FromAttribution's walk of the requests.
func ServedTenants(t *ingest.Trace, att *attribution.Result) map[uint32][]string {
	if att == nil {
		return map[uint32][]string{}
	}
	s := newServedTally(t)
	for i := range att.Requests {
		r := &att.Requests[i]
		s.request(r.Span, att.Tenant(r))
	}
	return s.finish(att)
}

// servedTally gathers ServedTenants' map: request adds each request's
// resource's pid (in the requests' order), finish the steps' engines' and
// sorts each pid's tenants.
type servedTally struct {
	t   *ingest.Trace
	out map[uint32][]string
	// Consecutive requests mostly repeat the pair just added (one engine's
	// steps, one resource's spans): that one is skipped without a lookup.
	lastPid    uint32
	lastTenant string
	// Each resource's pid is read once, not once a request: resourcePid[ri]
	// is pid+1, 0 while not yet read (a pid of 0 or none adds nothing).
	resourcePid []int64
}

func newServedTally(t *ingest.Trace) *servedTally {
	return &servedTally{t: t, out: map[uint32][]string{}, resourcePid: make([]int64, len(t.Resources))}
}

// add lists tenant among pid's.
func (s *servedTally) add(pid uint32, tenant string) {
	if pid == 0 || tenant == "" || (pid == s.lastPid && tenant == s.lastTenant) {
		return
	}
	s.lastPid, s.lastTenant = pid, tenant
	if !slices.Contains(s.out[pid], tenant) {
		s.out[pid] = append(s.out[pid], tenant)
	}
}

// request adds the tenant of a request whose span is t.Spans[span] to the
// pid of the span's resource.
func (s *servedTally) request(span int, tenant string) {
	t := s.t
	if span < 0 || span >= len(t.Spans) {
		return
	}
	ri := t.Spans[span].Resource
	if ri < 0 || int(ri) >= len(t.Resources) {
		return
	}
	if s.resourcePid[ri] == 0 {
		s.resourcePid[ri] = 1
		if v, ok := t.Attr(t.Resources[ri].Attrs, "process.pid"); ok {
			if pid, ok := pidValue(t, v); ok {
				s.resourcePid[ri] = int64(pid) + 1
			}
		}
	}
	s.add(uint32(s.resourcePid[ri]-1), tenant)
}

// finish adds the tenants of each step's requests to its engine's pid,
// after every request's (request), and returns the map, each pid's
// tenants sorted.
func (s *servedTally) finish(att *attribution.Result) map[uint32][]string {
	for si := range att.Steps {
		st := &att.Steps[si]
		if st.Engine < 0 || st.Engine >= len(att.Engines) {
			continue
		}
		pid := att.Engines[st.Engine].Pid
		for _, ri := range st.Requests {
			if ri >= 0 && int(ri) < len(att.Requests) {
				s.add(pid, att.Tenant(&att.Requests[ri]))
			}
		}
	}
	for pid := range s.out {
		slices.Sort(s.out[pid])
	}
	return s.out
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
