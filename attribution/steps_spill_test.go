package attribution_test

import (
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// While spilling is on, the steps' GPU ops and requests and the requests'
// token times (held to the end of a long run's command: tens of MB) are
// carved out of tables in spill files, and the token walker's arrays of a
// value a step and a request are tables too, given back once it has
// walked: the steps, the summary and every token's breakdown are those
// made on the heap.
func TestStepListsSpill(t *testing.T) {
	run, err := stepsRun()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		dropNVTX bool
	}{{"nvtx projection", false}, {"time window", true}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := decodeWithGPU(t, run, tc.dropNVTX)
			// lists is the bytes of the steps' lists and token times, held,
			// walking the bytes in spill files while a walk is under way.
			var lists, before, walking int64
			analyze := func() string {
				res := attribution.Analyze(tr, attribution.DefaultOptions)
				h := fnv.New64a()
				fmt.Fprintf(h, "%+v %+v %+v", res.Steps, res.Tokens, res.Requests)
				lists = 0
				for _, st := range res.Steps {
					lists += int64(4 * (len(st.Ops) + len(st.Requests)))
				}
				for i := range res.Requests {
					tokens := res.TokenTimes(&res.Requests[i])
					fmt.Fprintf(h, "%v", tokens)
					lists += int64(8 * len(tokens))
				}
				walking, before = -1, spill.Read().Mapped
				res.EachToken(func(tb *attribution.TokenBreakdown) {
					if walking < 0 {
						walking = spill.Read().Mapped
					}
					fmt.Fprintf(h, "%+v", *tb)
				})
				return fmt.Sprintf("%x", h.Sum64())
			}
			want := analyze()

			spilltest.Enable(t)
			// Tables of 8 KiB and more in files.
			spill.Budget(64 << 10)
			if got := analyze(); got != want {
				t.Errorf("spilled, the steps, tokens and breakdowns differ from those made on the heap")
			}
			held := spill.Read().Mapped
			if held != before {
				t.Errorf("%d bytes in spill files after the walk, want the %d before it: the walker's tables given back", held, before)
			}
			if lists == 0 || held < lists {
				t.Errorf("%d bytes in spill files after the analysis, want at least %d (the steps' lists and token times)", held, lists)
			}
			// The walker's parts, 184 bytes a step, beside what is held.
			if least := held + 184*int64(len(run.Steps)); walking < least {
				t.Errorf("%d bytes in spill files while the tokens are walked, want at least %d", walking, least)
			}
		})
	}
}
