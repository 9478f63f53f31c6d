package attribution

import "github.com/llmprof/llmprof/internal/spill"

// rowLists are lists of values a row, as CSR arrays in tables
// (spill.Make): row r's values are vals[first[r]:first[r+1]], in the order
// they were given. Their holder gives them back (free) when done.
type rowLists struct{ first, vals []int32 }

// newRowLists builds the lists of rows rows from each, which calls
// emit(row, value) for every value: twice, once to count and once to fill,
// so it must emit the same values in the same order both times.
func newRowLists(rows int, each func(emit func(row, value int32))) rowLists {
	l := rowLists{first: spill.Make[int32](rows + 1)}
	each(func(r, _ int32) { l.first[r+1]++ })
	for i := 1; i < len(l.first); i++ {
		l.first[i] += l.first[i-1]
	}
	l.vals = spill.Make[int32](int(l.first[rows]))
	fill := append(spill.Slice[int32](rows), l.first[:rows]...)
	each(func(r, v int32) {
		l.vals[fill[r]] = v
		fill[r]++
	})
	spill.Free(fill)
	return l
}

// of is row r's values.
func (l rowLists) of(r int) []int32 { return l.vals[l.first[r]:l.first[r+1]] }

// free gives back the tables: nothing may read the lists afterwards.
func (l *rowLists) free() {
	spill.Free(l.first)
	spill.Free(l.vals)
	*l = rowLists{}
}
