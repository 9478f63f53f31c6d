package nsys

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// schema is what the export holds: its tables and their columns. nsys
// creates tables lazily (only for data that was collected) and adds columns
// from release to release, so every query is built from this, by name.
type schema struct {
	tables map[string]map[string]bool
}

// readSchema lists the tables. Columns are read on demand with PRAGMA
// table_info, since an export has up to 90 tables and we read a dozen.
func readSchema(c *sqlite.Conn) (*schema, error) {
	names, err := c.Strings("SELECT name FROM sqlite_master WHERE type = 'table'")
	if err != nil {
		return nil, err
	}
	s := &schema{tables: map[string]map[string]bool{}}
	for _, n := range names {
		s.tables[n] = nil
	}
	return s, nil
}

func (s *schema) has(table string) bool {
	_, ok := s.tables[table]
	return ok
}

// columns returns the column set of a table, reading it once.
func (s *schema) columns(c *sqlite.Conn, table string) (map[string]bool, error) {
	cols, ok := s.tables[table]
	if !ok {
		return nil, nil
	}
	if cols != nil {
		return cols, nil
	}
	names, err := c.Strings("SELECT name FROM pragma_table_info(" + quoteString(table) + ")")
	if err != nil {
		return nil, err
	}
	cols = map[string]bool{}
	for _, n := range names {
		cols[n] = true
	}
	s.tables[table] = cols
	return cols, nil
}

// names lists the tables, sorted, for messages.
func (s *schema) names() []string {
	out := make([]string, 0, len(s.tables))
	for n := range s.tables {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// need says how a column matters to the decoder.
type need uint8

const (
	// optional columns exist only in some nsys versions; when absent they
	// read as NULL without comment.
	optional need = iota
	// expected columns exist in every version from 2023.1 on; when absent
	// the decoder says so once and reads them as NULL.
	expected
	// required columns are needed to use a row at all: without the column
	// the table is skipped, and a row where it is NULL is skipped.
	required
)

// column is one column the decoder reads from a table.
type column struct {
	name string
	need need
	// notNull marks columns nsys declares NOT NULL: a NULL there is damage
	// and is reported.
	notNull bool
	kind    colKind
}

// colKind says how a column's value is read into a row.
type colKind uint8

const (
	intCol  colKind = iota // cell.v holds the integer
	realCol                // cell.v holds the float64's bits
	textCol                // the row's text field holds the bytes
)

func req(name string) column     { return column{name: name, need: required, notNull: true} }
func exp(name string) column     { return column{name: name, need: expected, notNull: true} }
func expNull(name string) column { return column{name: name, need: expected} }
func opt(name string) column     { return column{name: name, need: optional} }

func (c column) real() column { c.kind = realCol; return c }
func (c column) text() column { c.kind = textCol; return c }

// query is a SELECT over one table built from the columns that exist.
type query struct {
	table string
	cols  []column
	// present[i] says whether cols[i] exists in the file.
	present []bool
	sql     string
	// selectFrom is sql up to its WHERE clause and where the filter, for
	// the rowid-range reads of parallel.go.
	selectFrom, where string
}

// buildQuery selects rowid and cols from table (absent columns as NULL),
// filtered by where and ordered by order. It reports absent columns through
// warn and fails only if a required column is missing.
func (d *decoder) buildQuery(table string, cols []column, where, order string) (*query, error) {
	have, err := d.schema.columns(d.conn, table)
	if err != nil {
		return nil, err
	}
	q := &query{table: table, cols: cols, present: make([]bool, len(cols))}
	var b strings.Builder
	b.WriteString("SELECT rowid")
	var missing []string
	for i, c := range cols {
		b.WriteString(", ")
		if have[c.name] {
			q.present[i] = true
			b.WriteString(quoteIdent(c.name))
			continue
		}
		switch c.need {
		case required:
			return nil, fmt.Errorf("table %s has no column %s", table, c.name)
		case expected:
			missing = append(missing, c.name)
		}
		b.WriteString("NULL")
	}
	if len(missing) > 0 {
		d.warnf("table "+table, "missing-column",
			"table %s has no column %s; read as NULL", table, strings.Join(missing, ", "))
	}
	fmt.Fprintf(&b, " FROM %s", quoteIdent(table))
	q.selectFrom, q.where = b.String(), where
	if where != "" {
		b.WriteString(" WHERE " + where)
	}
	if order != "" {
		b.WriteString(" ORDER BY " + order)
	}
	q.sql = b.String()
	return q, nil
}

// cell is one column value of a row: an integer, or the bits of a float for
// a real column. A text column's cell only records NULL-ness.
type cell struct {
	v    int64
	null bool
}

func (c cell) float() float64 { return math.Float64frombits(uint64(c.v)) }

// row is one row read from a table: its rowid, its cells in the order of the
// query's columns, and the text of the one text column a table may have
// (NVTX_EVENTS.text). text is valid only until the next row is read.
type row struct {
	rowid int64
	cells []cell
	text  []byte
}

// scan reads the current row of st (rowid first, then cols) into r.
func (r *row) scan(st *sqlite.Stmt, cols []column) {
	if cap(r.cells) < len(cols) {
		r.cells = make([]cell, len(cols))
	}
	r.cells = r.cells[:len(cols)]
	r.rowid, r.text = scanCells(st, cols, r.cells)
}

// scanCells reads the current row of st into cells and returns its rowid
// and the bytes of its text column (valid until the next Step). A number
// costs one call into SQLite: only a zero is asked whether it is a NULL.
func scanCells(st *sqlite.Stmt, cols []column, cells []cell) (rowid int64, text []byte) {
	rowid = st.Int64(0)
	for i, c := range cols {
		switch c.kind {
		case realCol:
			f, ok := st.Float64OK(i + 1)
			cells[i] = cell{v: int64(math.Float64bits(f)), null: !ok}
		case textCol:
			cells[i] = cell{null: st.IsNull(i + 1)}
			if !cells[i].null {
				text = st.TextBytes(i + 1)
			}
		default:
			v, ok := st.Int64OK(i + 1)
			cells[i] = cell{v: v, null: !ok}
		}
	}
	return rowid, text
}

// nullNotNull names the NOT NULL columns that are NULL in r.
func nullNotNull(cols []column, present []bool, r *row) []string {
	var bad []string
	for i, c := range cols {
		if c.notNull && present[i] && r.cells[i].null {
			bad = append(bad, c.name)
		}
	}
	return bad
}

func quoteIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
