package causal

import (
	"runtime"
	"slices"
	"testing"
)

// groupByTenant keeps each tenant's requests in input order, groups in the
// order of the tenants' first requests, leaves out (and counts) requests
// without a tenant, and carves the groups from one array each to its size:
// the pointers allocated are the requests', not regrown arrays', and an
// append to one group never writes into the next.
func TestGroupByTenant(t *testing.T) {
	const n = 10_000
	reqs := make([]Request, n)
	for i := range reqs {
		switch {
		case i%10 == 9:
			reqs[i].Tenant = 0
		case i%3 == 0:
			reqs[i].Tenant = 7
		default:
			reqs[i].Tenant = Tenant(2 + i%2)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	groups, group, bad := groupByTenant(reqs)
	runtime.ReadMemStats(&after)
	if got, most := after.TotalAlloc-before.TotalAlloc, uint64(8*n+4096); got > most {
		t.Errorf("%d bytes allocated for %d requests, want at most %d (one array of their pointers)", got, n, most)
	}
	if bad != n/10 {
		t.Errorf("%d without a tenant, want %d", bad, n/10)
	}
	if want := map[Tenant]int{7: 0, 3: 1, 2: 2}; len(group) != len(want) || group[7] != 0 || group[3] != 1 || group[2] != 2 {
		t.Fatalf("groups %v, want %v (the order of first requests)", group, want)
	}
	want := map[Tenant][]*Request{}
	for i := range reqs {
		if tn := reqs[i].Tenant; tn != 0 {
			want[tn] = append(want[tn], &reqs[i])
		}
	}
	total := 0
	for tn, g := range group {
		if !slices.Equal(groups[g], want[tn]) {
			t.Fatalf("group %d (tenant %d): not the tenant's requests in input order", g, tn)
		}
		total += len(groups[g])
		if cap(groups[g]) != len(groups[g]) {
			t.Errorf("group %d: cap %d for %d requests", g, cap(groups[g]), len(groups[g]))
		}
	}
	if total != n-bad {
		t.Errorf("%d requests grouped, want %d", total, n-bad)
	}
	next := groups[1][0]
	_ = append(groups[0], &reqs[0])
	if groups[1][0] != next {
		t.Error("an append to the first group wrote into the second")
	}
}
