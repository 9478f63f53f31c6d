package causal

import (
	"cmp"
	"fmt"
	"slices"
)

// DefaultMaxTenants is Options.MaxTenants' default.
const DefaultMaxTenants = 16

// OtherTenants summarizes the tenants left out of the pairwise analysis
// when there are more than Options.MaxTenants (Result.Others).
type OtherTenants struct {
	// Name is the source their load was merged into.
	Name string `json:"name"`
	// Tenants and Requests count them and their requests.
	Tenants  int `json:"tenants"`
	Requests int `json:"requests"`
	// LoadShare is their share of the total load (NaN without a load).
	LoadShare Float `json:"load_share"`
}

// boundTenants keeps the analysis linear in the number of tenants. A
// tenant key a user controls (enduser.id: one tenant per user) can have
// thousands of values, and every ordered pair is a regression, a result
// row and a heat-map cell: the work and the output grow with the square of
// the count. So only the max tenants with the most load (then the most
// requests, then by name) are analyzed pair by pair; the others' load is
// merged into one source, "others (K tenants)", which every kept target is
// regressed on (what the others do together still shows, and it is held
// fixed), and their requests are not targets. max ≤ 0 takes
// DefaultMaxTenants.
func boundTenants(load *Load, byTenant map[string][]*Request, max int) (*Load, map[string][]*Request, *OtherTenants) {
	if max <= 0 {
		max = DefaultMaxTenants
	}
	total := map[string]float64{}
	for k, name := range load.Tenants {
		s := 0.0
		for _, v := range load.Values[k] {
			s += v
		}
		total[name] = s
	}
	names := make([]string, 0, len(total)+len(byTenant))
	for n := range total {
		names = append(names, n)
	}
	for n := range byTenant {
		if _, ok := total[n]; !ok {
			names = append(names, n)
		}
	}
	if len(names) <= max {
		return load, byTenant, nil
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(total[b], total[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(len(byTenant[b]), len(byTenant[a])); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	keep := map[string]bool{}
	for _, n := range names[:max] {
		keep[n] = true
	}
	rest := names[max:]
	others := &OtherTenants{Name: fmt.Sprintf("others (%d tenants)", len(rest)), Tenants: len(rest), LoadShare: nan}
	kept := map[string][]*Request{}
	for n, reqs := range byTenant {
		if keep[n] {
			kept[n] = reqs
		} else {
			others.Requests += len(reqs)
		}
	}
	// The kept series in name order, then the merged one.
	out := &Load{Kind: load.Kind, Grid: load.Grid, Notes: load.Notes, ObservedFrom: load.ObservedFrom, ObservedTo: load.ObservedTo}
	merged := make([]float64, load.Grid.N)
	var mergedMembers []string
	all, rested := 0.0, 0.0
	for k, name := range load.Tenants {
		all += total[name]
		if keep[name] {
			out.Tenants = append(out.Tenants, name)
			out.Values = append(out.Values, load.Values[k])
			out.Members = append(out.Members, load.members(k))
			continue
		}
		rested += total[name]
		for i, v := range load.Values[k] {
			merged[i] += v
		}
		mergedMembers = append(mergedMembers, load.members(k)...)
	}
	if len(load.Tenants) > 0 && all > 0 {
		others.LoadShare = Float(rested / all)
	}
	if len(mergedMembers) > 0 {
		// Load.Tenants stay sorted (Index searches them): the merged name
		// goes where it sorts.
		at, _ := slices.BinarySearch(out.Tenants, others.Name)
		out.Tenants = slices.Insert(out.Tenants, at, others.Name)
		out.Values = slices.Insert(out.Values, at, merged)
		out.Members = slices.Insert(out.Members, at, mergedMembers)
	}
	out.finish()
	return out, kept, others
}
