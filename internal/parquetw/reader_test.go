package parquetw

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// readAll reads every value of data back as cells, row by row.
func readAll(data []byte) ([]Column, [][]cell, error) {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	cols := r.Columns()
	var rows [][]cell
	for g := range r.RowGroups() {
		n := r.GroupRows(g)
		group := make([][]cell, n)
		for i := range group {
			group[i] = make([]cell, len(cols))
		}
		for c, col := range cols {
			v, err := r.Read(g, c)
			if err != nil {
				return nil, nil, err
			}
			for i := range n {
				x := cell{typ: col.Type, ok: !v.Null(i)}
				if x.ok {
					switch col.Type {
					case Bool:
						x.b = v.Bool[i]
					case Int32, Date:
						x.i = int64(v.Int32[i])
					case Int64, TimestampMicros:
						x.i = v.Int64[i]
					case Double:
						x.f = v.Double[i]
						x.i = int64(math.Float64bits(x.f))
					default:
						x.s = string(v.Bytes[i])
					}
				}
				group[i][c] = x
			}
		}
		rows = append(rows, group...)
	}
	return cols, rows, nil
}

var readerTypes = append(append([]Column(nil), allTypes...), Column{"bin", Binary, false}, Column{"nbin", Binary, true})

// TestReaderRoundTrip reads back what the writer wrote, every value of every
// type, through dictionary and PLAIN pages, many row groups and pages.
func TestReaderRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range roundTripCases {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(r, readerTypes, tc.rows, tc.nullProb, tc.vocab, tc.strLen)
			data := write(t, readerTypes, rows, Options{RowGroupRows: tc.rgRows})
			cols, got, err := readAll(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(cols) != len(readerTypes) {
				t.Fatalf("%d columns, want %d", len(cols), len(readerTypes))
			}
			for i, c := range cols {
				if c != readerTypes[i] {
					t.Errorf("column %d is %+v, want %+v", i, c, readerTypes[i])
				}
			}
			if len(got) != len(rows) {
				t.Fatalf("%d rows, want %d", len(got), len(rows))
			}
			for i := range rows {
				for j := range rows[i] {
					w, g := rows[i][j], got[i][j]
					if w.typ == Double {
						w.f, g.f = 0, 0 // compared bit for bit in i
					}
					if w != g {
						t.Fatalf("row %d column %s: %+v, want %+v", i, readerTypes[j].Name, g, w)
					}
				}
			}
		})
	}
}

// TestReaderRejects: what the reader does not read is an error.
func TestReaderRejects(t *testing.T) {
	good := write(t, readerTypes, gen(rand.New(rand.NewPCG(1, 1)), readerTypes, 50, 0.3, 5, 10), Options{})
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"no magic", append(append([]byte(nil), good[:len(good)-4]...), "PAR2"...)},
		{"footer longer than the file", append(append([]byte(nil), good[:len(good)-8]...), 0xff, 0xff, 0xff, 0x7f, 'P', 'A', 'R', '1')},
		{"truncated", good[len(good)/2:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := readAll(tc.data); err == nil {
				t.Error("read without an error")
			}
		})
	}
}

// FuzzReader: no input makes the reader panic, hang or allocate without
// bound; a file the writer wrote reads back whole.
func FuzzReader(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 40} {
		rows := gen(r, readerTypes, n, 0.3, 4, 8)
		f.Add(write(f, readerTypes, rows, Options{RowGroupRows: 16}))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = readAll(data) // any error is fine; a panic is not
	})
}
