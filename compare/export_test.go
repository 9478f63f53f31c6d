package compare

// WithinInterval is, for each metric decided with a between-run bound, its
// change and the interval before the bound widened it (percent): for a
// paired tail (pairedTail) the paired block bootstrap's alone. The
// calibration of the bounds (between_test.go) reads it.
func WithinInterval(baseline, candidate Side, opts Options) (map[string][3]float64, *Result, error) {
	c, err := compareSides(baseline, candidate, opts)
	if err != nil {
		return nil, nil, err
	}
	out := map[string][3]float64{}
	for _, w := range c.works {
		if w.withinKnown {
			out[w.spec.name] = [3]float64{w.m.DeltaPct, w.withinLo, w.withinHi}
		}
	}
	return out, c.res, nil
}
