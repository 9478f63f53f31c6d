package report

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/llmprof/llmprof/compare"
)

// appendShortestG writes what strconv's shortest 'g' writes: on milliseconds
// to the nanosecond and whole counts of every magnitude (its fast path), on
// arbitrary doubles, and at the edges of the fast path's range. 50,000 draws
// of each kind (0.1 s of CPU); LLMPROF_LONG=1 draws 300,000.
func TestAppendShortestG(t *testing.T) {
	check := func(v float64) {
		t.Helper()
		want := strconv.AppendFloat(nil, v, 'g', -1, 64)
		if got := appendShortestG(nil, v); string(got) != string(want) {
			t.Fatalf("appendShortestG(%v) = %s, strconv %s", v, got, want)
		}
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1e-4, 9.9999e-5, 1.00001e-4, 1e6, 999999.999999, 999999.9999995, 1e6 - 1e-7,
		0.1, 0.2, 0.3, 1, 10, 100, 123456, 0.000001, 0.000123, 5e-324, math.MaxFloat64, math.Inf(1), math.NaN(), 1.5, -2.25, 12.3456789} {
		check(v)
		check(-v)
	}
	draws := 50_000
	if os.Getenv("LLMPROF_LONG") != "" {
		draws = 300_000
	}
	rng := rand.New(rand.NewPCG(10, 11))
	for range draws {
		// Nanoseconds in milliseconds, from under 0.1 µs to over 1000 s.
		ns := rng.Int64N(int64(math.Pow(10, float64(1+rng.IntN(13)))))
		check(float64(ns) / 1e6)
		check(-float64(ns) / 1e6)
		check(float64(rng.IntN(2_000_000)))
		check(math.Float64frombits(rng.Uint64()))
		check(rng.Float64() * math.Pow(10, float64(rng.IntN(14)-6)))
	}
}

// TestAppendNanosAsMs: appendNanosAsMs(x) writes strconv's shortest 'g' of
// x/1e6, for every whole count of nanoseconds from −200,000 to 200,000 (the
// exponent forms under 100 ns and the edge at 100 included), at the edges of
// its range (10¹² and 2⁵³), on a tie between two shortest decimals (the
// first that LLMPROF_LONG's draws found with ties rounded down) and on
// random draws: whole nanoseconds of every magnitude to 10¹⁵, fractions
// (TPOT's quotients), and arbitrary doubles. 50,000 draws of each kind (0.2 s
// of CPU: each seeded mutation of appendShortestFixed's interval, rounding or
// digits that 200,000 draws caught failed here at once); LLMPROF_LONG=1 draws
// 3,000,000.
func TestAppendNanosAsMs(t *testing.T) {
	check := func(x float64) {
		t.Helper()
		want := strconv.AppendFloat(nil, x/1e6, 'g', -1, 64)
		if got := appendNanosAsMs([]byte("x"), x); string(got[1:]) != string(want) {
			t.Fatalf("appendNanosAsMs(%v) = %s, strconv %s", x, got[1:], want)
		}
	}
	for ns := -200_000; ns <= 200_000; ns++ {
		check(float64(ns))
	}
	for _, x := range []float64{math.Copysign(0, -1), 1e12, 1e12 - 1, 1e12 + 1, 999_999_999_999.5, 1 << 53, 1<<53 - 1, 1<<53 + 2, 1 << 62,
		1 << 63, math.MaxInt64, 0.5, 99.5, 100.5, 1e-300, 5e-324, math.MaxFloat64, math.Inf(1), math.NaN(),
		1.6152650170898438e+11} { // x/1e6 exactly halfway between two shortest decimals: rounds to the even one
		check(x)
		check(-x)
	}
	draws := 50_000
	if os.Getenv("LLMPROF_LONG") != "" {
		draws = 3_000_000
	}
	rng := rand.New(rand.NewPCG(12, 13))
	for range draws {
		ns := float64(rng.Int64N(int64(math.Pow(10, float64(1+rng.IntN(15))))))
		check(ns)
		check(-ns)
		check(ns / float64(1+rng.IntN(1000)))
		check(math.Float64frombits(rng.Uint64()))
	}
}

// TestAppendCount: appendCount(x) writes strconv's shortest 'g' of x, for
// every count to 1,050,000 and the values its fast path leaves out.
func TestAppendCount(t *testing.T) {
	check := func(x float64) {
		t.Helper()
		want := strconv.AppendFloat(nil, x, 'g', -1, 64)
		if got := appendCount([]byte("x"), x); string(got[1:]) != string(want) {
			t.Fatalf("appendCount(%v) = %s, strconv %s", x, got[1:], want)
		}
	}
	for n := range 1_050_001 {
		check(float64(n))
	}
	for _, x := range []float64{math.Copysign(0, -1), -1, -999_999, 0.5, 1e21, 1 << 63, math.Inf(-1), math.NaN()} {
		check(x)
	}
}

// TestAppendShortestFixed: appendShortestFixed writes strconv's shortest 'g'
// across its range, 10⁻⁴ ≤ |v| < 10⁶: at its ends and at every power of two
// in it (whose lower neighbour is nearer), with their neighbours; on the
// neighbours of short decimals (k/10^j, where a shorter candidate lies near
// an end of the interval); on TPOT-like quotients of nanoseconds; and on
// doubles of random exponent and mantissa. 50,000 draws of each kind (0.35 s
// of CPU; no seeded mutation was found that 300,000 draws caught and 50,000
// did not); LLMPROF_LONG=1 draws 3,000,000.
func TestAppendShortestFixed(t *testing.T) {
	check := func(v float64) {
		t.Helper()
		if a := math.Abs(v); !(a >= 1e-4 && a < 1e6) {
			return
		}
		want := strconv.AppendFloat(nil, v, 'g', -1, 64)
		if got := appendShortestFixed([]byte("x"), v); string(got[1:]) != string(want) {
			t.Fatalf("appendShortestFixed(%v) = %s, strconv %s", v, got[1:], want)
		}
	}
	near := func(v float64) {
		t.Helper()
		check(v)
		check(-v)
		for _, w := range []float64{math.Nextafter(v, 0), math.Nextafter(v, math.Inf(1))} {
			check(w)
			check(-w)
		}
	}
	near(1e-4)
	near(1e6)
	for e := -14; e <= 20; e++ {
		near(math.Ldexp(1, e))
	}
	draws := 50_000
	if os.Getenv("LLMPROF_LONG") != "" {
		draws = 3_000_000
	}
	rng := rand.New(rand.NewPCG(14, 15))
	for range draws {
		j := rng.IntN(11)
		near(float64(rng.Int64N(int64(math.Pow(10, float64(1+rng.IntN(10)))))) / math.Pow(10, float64(j)))
		check(float64(rng.Int64N(1e13)) / float64(1+rng.IntN(2000)) / 1e6)
		check(math.Ldexp(1+rng.Float64(), rng.IntN(35)-14))
		check(math.Float64frombits(uint64(rng.IntN(1<<11))<<52 | rng.Uint64()>>12))
	}
}

// TestSeriesAtEveryDepth: a series writes what encoding/json writes at
// every depth, its separator stored whole (16 bytes at most: in six objects
// or fewer) or appended (deeper), across the writer's flushes.
func TestSeriesAtEveryDepth(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	series := compare.Series{0, math.Copysign(0, -1), math.NaN(), math.Inf(-1), 1e21, 5e-324, 12.345678, 1.0 / 3}
	for range 30_000 {
		series = append(series, float64(rng.Int64N(1e10))/1e6, float64(rng.Int64N(1e10))/1e6/float64(2+rng.IntN(400)), 0)
	}
	for depth := range 12 {
		var v any = series
		for range depth {
			v = map[string]any{"k": v}
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		w := newJSONWriter()
		w.out = &got
		for range depth {
			w.beginObject()
			w.key("k")
		}
		w.series(series)
		for range depth {
			w.endObject()
		}
		got.Write(append(w.b, '\n'))
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			i := 0
			for i < got.Len() && i < want.Len() && got.Bytes()[i] == want.Bytes()[i] {
				i++
			}
			t.Fatalf("depth %d: differs from encoding/json at byte %d: %.80q, want %.80q", depth, i, got.Bytes()[i:], want.Bytes()[i:])
		}
	}
}

// appendUint writes what strconv does, at every digit count.
func TestAppendUint(t *testing.T) {
	for _, u := range []uint64{0, 1, 9, 10, 99, 100, 101, 999, 1000, 123456, 999999, 1000000, 1 << 53, math.MaxUint64} {
		if got, want := string(appendUint([]byte("x"), u)), "x"+strconv.FormatUint(u, 10); got != want {
			t.Errorf("appendUint(%d) = %s, want %s", u, got, want)
		}
	}
}

// BenchmarkJSONSeries writes series shaped like a report's samples (44,544
// requests, as in the 30 MiB OTLP dump of docs/otlp.md): milliseconds to the nanosecond with a tenth missing, stage
// times that are mostly zero, whole token counts, and TPOT quotients that
// take strconv's path.
func BenchmarkJSONSeries(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 44544
	ms := func() float64 { return float64(rng.Int64N(1e10)) / 1e6 }
	gen := []func() float64{
		func() float64 {
			if rng.IntN(10) == 0 {
				return math.NaN()
			}
			return ms()
		},
		func() float64 {
			if rng.IntN(3) > 0 {
				return 0
			}
			return ms()
		},
		func() float64 { return float64(rng.IntN(4000)) },
		func() float64 { return ms() / float64(2+rng.IntN(400)) },
	}
	// A report's mix: ten series of milliseconds, eight mostly zero, three
	// of counts, one of TPOT.
	var all []compare.Series
	for k, copies := range []int{10, 8, 3, 1} {
		for range copies {
			s := make(compare.Series, n)
			for i := range s {
				s[i] = gen[k]()
			}
			all = append(all, s)
		}
	}
	w := newJSONWriter()
	w.out = io.Discard
	b.SetBytes(int64(n * len(all)))
	for b.Loop() {
		w.beginObject()
		for _, s := range all {
			w.key("x")
			w.series(s)
		}
		w.endObject()
		w.b = w.b[:0]
	}
}

// BenchmarkAppendShortestG formats milliseconds to the nanosecond, the fast
// path's values.
func BenchmarkAppendShortestG(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	vs := make([]float64, 4096)
	for i := range vs {
		vs[i] = float64(rng.Int64N(1e10)) / 1e6
	}
	buf := make([]byte, 0, 16*len(vs))
	for b.Loop() {
		buf = buf[:0]
		for _, v := range vs {
			buf = appendShortestG(buf, v)
		}
	}
}

// BenchmarkJSONColumns writes columns of raw values shaped like the 100 MiB
// OTLP dump's samples (docs/otlp.md): nanoseconds, a tenth unknown; stage
// and token-bucket times, mostly zero; whole counts; TPOT's quotients.
func BenchmarkJSONColumns(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 44544
	ns := func() float64 { return float64(rng.Int64N(1e10)) }
	gen := []func() float64{
		func() float64 {
			if rng.IntN(10) == 0 {
				return math.NaN()
			}
			return ns()
		},
		func() float64 {
			if rng.IntN(3) > 0 {
				return 0
			}
			return ns()
		},
		func() float64 { return float64(rng.IntN(4000)) },
		func() float64 { return ns() / float64(2+rng.IntN(400)) },
	}
	var all []compare.Column
	for k, copies := range []int{10, 8, 3, 1} {
		for range copies {
			c := compare.Column{Name: "x", Scale: 1e6, Raw: make([]float64, n)}
			if k == 2 {
				c.Scale = 1
			}
			for i := range c.Raw {
				c.Raw[i] = gen[k]()
			}
			all = append(all, c)
		}
	}
	w := newJSONWriter()
	w.out = io.Discard
	b.SetBytes(int64(n * len(all)))
	for b.Loop() {
		w.beginObject()
		for i := range all {
			w.key("x")
			w.column(&all[i])
		}
		w.endObject()
		w.b = w.b[:0]
	}
}
