package causal

import (
	"math/rand/v2"
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

// tenantSlots gives each Tenant the slot it was set, below its array's
// bound and past it (the map), and none to a Tenant never set; and
// groupByTenant groups Tenants past the array as those in it.
func TestTenantSlotsMatchesMap(t *testing.T) {
	var s tenantSlots
	want := map[Tenant]int32{}
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range 2000 {
		tn := Tenant(rng.IntN(600))
		if _, ok := want[tn]; ok {
			continue
		}
		want[tn] = int32(i)
		s.set(tn, int32(i))
	}
	for tn := range Tenant(700) {
		got, ok := s.get(tn)
		w, wok := want[tn]
		if ok != wok || ok && got != w {
			t.Fatalf("tenant %d: slot %d %v, set %d %v", tn, got, ok, w, wok)
		}
	}
	reqs := make([]Request, 900)
	for i := range reqs {
		reqs[i].Tenant = Tenant(1 + (i*37)%450) // 450 tenants, two requests each
	}
	groups, group, bad := groupByTenant(reqs)
	if bad != 0 || len(groups) != 450 || len(group) != 450 {
		t.Fatalf("%d groups, %d named, %d bad; want 450, 450, 0", len(groups), len(group), bad)
	}
	for tn, g := range group {
		if len(groups[g]) != 2 || groups[g][0].Tenant != tn || groups[g][1].Tenant != tn {
			t.Errorf("tenant %d: group %d holds %d requests", tn, g, len(groups[g]))
		}
	}
}
