package synth

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// jitterOTLP moves every span's start and end by a uniform amount in
// [−OTLPJitterNs, +OTLPJitterNs], keeping end ≥ start. The amount is a hash
// of the seed, the span ID and the end (start or end), so it does not depend
// on the order spans are written in or on the random streams of the run.
func (r *Run) jitterOTLP(td ptrace.Traces) {
	j := r.Config.OTLPJitterNs
	if j <= 0 {
		return
	}
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for k := range sss.Len() {
			spans := sss.At(k).Spans()
			for n := range spans.Len() {
				s := spans.At(n)
				id := s.SpanID()
				key := binary.BigEndian.Uint64(id[:]) ^ uint64(r.Config.Seed)*0x9e3779b97f4a7c15
				start := int64(s.StartTimestamp()) + jitterOf(key, 1, j)
				end := max(int64(s.EndTimestamp())+jitterOf(key, 2, j), start)
				s.SetStartTimestamp(pcommon.Timestamp(start))
				s.SetEndTimestamp(pcommon.Timestamp(end))
			}
		}
	}
}

// jitterOf is a deterministic uniform value in [−j, j] (splitmix64).
func jitterOf(key, which uint64, j int64) int64 {
	x := key + which*0xbf58476d1ce4e5b9
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int64(x%uint64(2*j+1)) - j
}
