package attribution

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// newRowLists gives each row its values in the order emitted, rows without
// any empty, against lists appended one value at a time.
func TestRowListsMatchAppendedLists(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, rows := range []int{0, 1, 7, 300} {
		var pairs [][2]int32
		if rows > 0 {
			for range r.IntN(20 * rows) {
				pairs = append(pairs, [2]int32{int32(r.IntN(rows)), r.Int32N(1000)})
			}
		}
		want := make([][]int32, rows)
		for _, p := range pairs {
			want[p[0]] = append(want[p[0]], p[1])
		}
		l := newRowLists(rows, func(emit func(row, value int32)) {
			for _, p := range pairs {
				emit(p[0], p[1])
			}
		})
		for row := range rows {
			if got := l.of(row); !slices.Equal(got, want[row]) && len(got)+len(want[row]) > 0 {
				t.Fatalf("%d rows: row %d has %v, want %v", rows, row, got, want[row])
			}
		}
		if len(l.vals) != len(pairs) {
			t.Errorf("%d rows: %d values held, want %d", rows, len(l.vals), len(pairs))
		}
		l.free()
	}
}
