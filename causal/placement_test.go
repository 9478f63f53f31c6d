package causal

import (
	"math/rand/v2"
	"testing"
)

// tenantPlacement's one walk of the requests finds each field's mode as
// mode does over that field alone, where it took one walk for each.
func TestTenantPlacementMatchesModeOfEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	values := []int16{-1, 0, 1, 2, 63, 64, 65, 1000}
	for range 300 {
		reqs := make([]*Request, rng.IntN(40))
		for i := range reqs {
			reqs[i] = &Request{Device: values[rng.IntN(len(values))], Instance: values[rng.IntN(len(values))]}
		}
		wantDev := mode(len(reqs), func(i int) int16 { return reqs[i].Device })
		wantInst := mode(len(reqs), func(i int) int16 { return reqs[i].Instance })
		if dev, inst := tenantPlacement(reqs, "a", nil); dev != wantDev || inst != wantInst {
			t.Fatalf("placement of %d requests: %d, %d, want %d, %d", len(reqs), dev, inst, wantDev, wantInst)
		}
	}
}
