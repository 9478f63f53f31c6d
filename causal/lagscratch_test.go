package causal

import (
	"encoding/json"
	"testing"
)

// The lag models' fits are made in a lagScratch that one source's and one
// target's fits reuse: every pair's lag model, as Analyze computes it, is
// the one computed with fresh memory for each fit, to the digit. testModel
// reads its best fit's design and residuals (HC3) after fitting the other
// AR orders, so a fit made over the best one's memory would change it; the
// run has pairs whose chosen order is not the last one fitted.
func TestLagScratchGivesFreshFits(t *testing.T) {
	run := defaultRuns()[0]
	res := run.analyze(Options{})
	o := Options{}.withDefaults()
	tm := MapTenants(run.trace, MapOptions{})
	end := int64(run.cfg.seconds) * 1e9
	for i := range run.requests {
		end = max(end, run.requests[i].End)
	}
	load := BusyLoad(run.trace.GPUOps, tm, NewGrid(0, end, 1e9))
	load.finish()
	byTenant := map[string][]*Request{}
	for i := range run.requests {
		r := &run.requests[i]
		byTenant[r.Tenant.String()] = append(byTenant[r.Tenant.String()], r)
	}
	compared, earlier := 0, 0
	for _, p := range res.Pairs {
		if p.Lag == nil {
			continue
		}
		rows, _ := collectRows(byTenant[p.Target], p.Metric, o.Controls, nil)
		if load.ObservedTo > load.ObservedFrom {
			from, to := load.ObservedFrom-load.Grid.Width, load.ObservedTo+load.Grid.Width
			in := rows.obs[:0]
			for _, r := range rows.obs {
				if r.start >= from && r.end <= to {
					in = append(in, r)
				}
			}
			rows.obs = in
		}
		lagIn := newLagInput(rows, load, o, nil)
		if lagIn.fits != nil {
			t.Fatal("a lagInput without a regressScratch has fits")
		}
		fresh := lagRegression(p.Source, p.Target, rows, load, o, res.Step, lagIn)
		a, _ := json.Marshal(p.Lag)
		b, _ := json.Marshal(fresh)
		if string(a) != string(b) {
			t.Fatalf("%s→%s %s: lag model with the scratch\n%s\nwith fresh memory\n%s", p.Source, p.Target, p.Metric, a, b)
		}
		compared++
		if p.Lag.Estimable && p.Lag.AR > 0 && p.Lag.AR < o.MaxAR {
			earlier++
		}
	}
	if compared == 0 || earlier == 0 {
		t.Fatalf("%d lag models compared, %d with an AR order below the last fitted: the test shows nothing", compared, earlier)
	}
}
