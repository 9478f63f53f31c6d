package causal

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// FuzzAnalyze feeds arbitrary requests, kernels and samples through the load
// builders, Analyze and KernelAnalyze. Whatever the input (negative or reversed times,
// zero or huge lengths, NaN values, a single bin), nothing may panic, and
// every estimable pair must carry finite figures.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"), uint8(3))
	f.Add(make([]byte, 200), uint8(1))
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\x80\x00\x00\x00\x00\x00\x00\x00\x7f"), uint8(9))
	f.Fuzz(func(t *testing.T, data []byte, tenants uint8) {
		k := int(tenants%4) + 1
		names := []string{"A", "B", "C", "D"}[:k]
		next := func() int64 {
			if len(data) < 8 {
				return 0
			}
			v := int64(binary.LittleEndian.Uint64(data))
			data = data[8:]
			return v
		}
		small := func() int64 { return next() % 1_000_000_000_000 }
		var reqs []Request
		tr := ingest.New()
		metric := tr.Strings.Intern(ingest.MetricNVMLProcessSMUtil)
		for i := 0; len(data) >= 8 && i < 400; i++ {
			a := small()
			switch i % 3 {
			case 0, 1:
				reqs = append(reqs, Request{
					Tenant: TenantOf(names[i%k]), Arrival: a, End: a + small()%1e11,
					TTFT: small() % 1e10, TPOT: small() % 1e9, BatchSize: float64(small() % 64),
					InputTokens: int(small() % 5000), OutputTokens: int(small() % 2000),
					Device: int16(small() % 2), Instance: int16(small()%3 - 1),
				})
			case 2:
				pid := uint32(i%k + 1)
				tr.GPUOps = append(tr.GPUOps, ingest.GPUOp{Start: a, End: a + small()%1e10, Pid: pid, Kind: ingest.OpKernel})
				v := float64(small() % 120)
				if i%7 == 0 {
					v = math.NaN()
				}
				tr.Samples = append(tr.Samples, ingest.Sample{Time: a, Value: v, Metric: metric, Pid: pid, Instance: -1})
			}
		}
		byPid := map[uint32]string{}
		for i, n := range names {
			byPid[uint32(i+1)] = n
		}
		tm := NewTenantMap(byPid)
		grid := GridFor(reqs, 1e9)
		if grid.N > 200_000 {
			grid = NewGrid(grid.Origin, grid.Origin+200_000*1e9, 1e9)
		}
		loads := []*Load{BusyLoad(tr.GPUOps, tm, grid), TokensInFlightLoad(reqs, grid), PrefillTokensLoad(reqs, grid)}
		if l, err := SMUtilLoad(tr, "", tm, grid); err == nil {
			loads = append(loads, l)
		}
		kr := KernelAnalyze(KernelInput{Trace: tr, Tenants: tm}, KernelOptions{MinKernels: 5, MinBlocks: 2})
		for _, p := range kr.Pairs {
			if p.Estimable && (math.IsNaN(float64(p.StretchPct)) || math.IsInf(float64(p.SE), 0) || math.IsNaN(float64(p.SE))) {
				t.Fatalf("estimable kernel pair %s→%s with stretch %v se %v", p.Source, p.Target, p.StretchPct, p.SE)
			}
		}
		for _, l := range loads {
			res, err := Analyze(Input{Requests: reqs, Load: l, Mapping: tm}, Options{MinRequests: 5, MinClusters: 2, MinBins: 10})
			if err != nil {
				continue
			}
			for _, p := range res.Pairs {
				if p.Estimable && (math.IsNaN(float64(p.Coef)) || math.IsInf(float64(p.SE), 0)) {
					t.Fatalf("estimable pair %s→%s with coef %v se %v", p.Source, p.Target, p.Coef, p.SE)
				}
			}
		}
	})
}
