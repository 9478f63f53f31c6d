package compare

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIndependentDrawsAreNotAReplay: two independent draws of as many
// prompts from one length distribution — log-normal lengths as chat and
// retrieval datasets have, down to a narrow one — agree far below
// replayAgreement, in arrival order and sorted alike, so they are neither
// a replay nor a reordering (the figures in replayAgreement's comment).
func TestIndependentDrawsAreNotAReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	draw := func(n int, median, sigma float64) *Run {
		r := &Run{Requests: n, InputTokens: make(Series, n)}
		for i := range r.InputTokens {
			r.InputTokens[i] = math.Floor(median * math.Exp(sigma*rng.NormFloat64()))
		}
		return r
	}
	for _, tc := range []struct {
		n             int
		median, sigma float64
	}{{200, 300, 0.5}, {2000, 300, 0.5}, {2000, 512, 0.1}, {2000, 100, 0.3}, {10000, 300, 0.5}} {
		worst := 0.0
		for range 20 {
			agree, sameSet, ok := workloadMatch(draw(tc.n, tc.median, tc.sigma), draw(tc.n, tc.median, tc.sigma))
			if !ok {
				t.Fatal("prompt lengths not found")
			}
			worst = max(worst, agree, sameSet)
		}
		if worst >= replayAgreement {
			t.Errorf("n %d, median %v, log-sd %v: two independent draws agree at %.2f", tc.n, tc.median, tc.sigma, worst)
		}
		t.Logf("n %d, median %v, log-sd %v: highest agreement of 20 pairs of draws %.2f", tc.n, tc.median, tc.sigma, worst)
	}
	// The same draw, and the same draw reversed, are a replay and a
	// reordering.
	b := draw(500, 300, 0.5)
	c := &Run{Requests: 500, InputTokens: append(Series(nil), b.InputTokens...)}
	if agree, _, _ := workloadMatch(b, c); agree != 1 {
		t.Errorf("a copy agrees at %v", agree)
	}
	for i, j := 0, len(c.InputTokens)-1; i < j; i, j = i+1, j-1 {
		c.InputTokens[i], c.InputTokens[j] = c.InputTokens[j], c.InputTokens[i]
	}
	if agree, sameSet, _ := workloadMatch(b, c); agree >= replayAgreement || sameSet != 1 {
		t.Errorf("reversed: agree %v, same set %v", agree, sameSet)
	}
}
