// Package sqlite is a minimal binding to SQLite for the nsys decoder and
// writer: open, prepare, step, read columns by index, bind parameters. It
// calls the pure-Go SQLite of modernc.org/sqlite/lib directly instead of going
// through database/sql, because database/sql boxes every column of every row
// in an interface and converts it again in Scan; for an Nsight Systems export
// with millions of kernel rows that overhead was 2.6× the cost of SQLite's
// own work (docs/nsys.md has the figures).
//
// A Conn and its statements must be used by one goroutine at a time.
package sqlite

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"unsafe"

	"modernc.org/libc"
	"modernc.org/libc/sys/types"
	lib "modernc.org/sqlite/lib"
)

// Error is an error reported by SQLite.
type Error struct {
	// Code is SQLite's extended result code.
	Code int
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Primary result codes callers test for.
const (
	CodeCorrupt = lib.SQLITE_CORRUPT
	CodeNotADB  = lib.SQLITE_NOTADB
	CodeIOErr   = lib.SQLITE_IOERR
)

// IsCorrupt reports whether err says the database file is damaged or is not
// a database (SQLITE_CORRUPT, SQLITE_NOTADB, or a short read of a truncated
// file).
func IsCorrupt(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code & 0xff {
	case CodeCorrupt, CodeNotADB, CodeIOErr:
		return true
	}
	return false
}

// Conn is an open database.
type Conn struct {
	tls *libc.TLS
	db  uintptr
	// scratch is C memory reused for text parameters and SQL strings.
	scratch    uintptr
	scratchLen int
}

// OpenReadOnly opens an existing database file for reading. The file is
// opened as immutable: SQLite takes no locks and looks for no journal, so a
// file on a read-only medium or one being copied elsewhere reads the same.
func OpenReadOnly(path string) (*Conn, error) {
	u := url.URL{Scheme: "file", Path: absolute(path), RawQuery: "mode=ro&immutable=1"}
	return open(u.String(), lib.SQLITE_OPEN_READONLY|lib.SQLITE_OPEN_URI|lib.SQLITE_OPEN_NOMUTEX)
}

// OpenReadWrite opens a database file for writing, creating it if it does not exist.
func OpenReadWrite(path string) (*Conn, error) {
	u := url.URL{Scheme: "file", Path: absolute(path), RawQuery: "mode=rwc"}
	return open(u.String(), lib.SQLITE_OPEN_READWRITE|lib.SQLITE_OPEN_CREATE|lib.SQLITE_OPEN_URI|lib.SQLITE_OPEN_NOMUTEX)
}

// absolute makes a path absolute for the file: URI: a relative path would be
// read as the URI's authority ("file://testdata/x" names host "testdata").
func absolute(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

func open(uri string, flags int32) (*Conn, error) {
	c := &Conn{tls: libc.NewTLS()}
	name, err := c.cstring(uri)
	if err != nil {
		c.tls.Close()
		return nil, err
	}
	pp := libc.Xmalloc(c.tls, 8)
	if pp == 0 {
		c.tls.Close()
		return nil, errors.New("sqlite: out of memory")
	}
	defer libc.Xfree(c.tls, pp)
	*cword(pp) = 0
	rc := lib.Xsqlite3_open_v2(c.tls, name, pp, flags, 0)
	c.db = *cword(pp)
	if rc != lib.SQLITE_OK {
		err := c.err(rc)
		c.Close()
		return nil, err
	}
	lib.Xsqlite3_extended_result_codes(c.tls, c.db, 1)
	return c, nil
}

// Close releases the database; statements must be closed first.
func (c *Conn) Close() error {
	if c == nil || c.tls == nil {
		return nil
	}
	var err error
	if c.db != 0 {
		if rc := lib.Xsqlite3_close_v2(c.tls, c.db); rc != lib.SQLITE_OK {
			err = c.err(rc)
		}
		c.db = 0
	}
	if c.scratch != 0 {
		libc.Xfree(c.tls, c.scratch)
		c.scratch = 0
	}
	c.tls.Close()
	c.tls = nil
	return err
}

// cstring copies s, NUL-terminated, into the connection's scratch memory.
// The result is valid until the next call that uses the scratch memory.
func (c *Conn) cstring(s string) (uintptr, error) {
	p, err := c.scratchBytes(len(s) + 1)
	if err != nil {
		return 0, err
	}
	b := cbytes(p, len(s)+1)
	copy(b, s)
	b[len(s)] = 0
	return p, nil
}

func (c *Conn) scratchBytes(n int) (uintptr, error) {
	if n > c.scratchLen {
		if c.scratch != 0 {
			libc.Xfree(c.tls, c.scratch)
		}
		size := max(n, 2*c.scratchLen, 256)
		c.scratch = libc.Xmalloc(c.tls, libcSize(size))
		if c.scratch == 0 {
			c.scratchLen = 0
			return 0, fmt.Errorf("sqlite: cannot allocate %d bytes", size)
		}
		c.scratchLen = size
	}
	return c.scratch, nil
}

// err builds an Error from a result code and the connection's message.
func (c *Conn) err(rc int32) error {
	msg := libc.GoString(lib.Xsqlite3_errstr(c.tls, rc))
	if c.db != 0 {
		if ext := lib.Xsqlite3_extended_errcode(c.tls, c.db); ext == rc || ext&0xff == rc&0xff {
			msg = libc.GoString(lib.Xsqlite3_errmsg(c.tls, c.db))
			rc = ext
		}
	}
	return &Error{Code: int(rc), Msg: msg}
}

// Exec runs one or more SQL statements that return no rows.
func (c *Conn) Exec(sql string) error {
	p, err := c.cstring(sql)
	if err != nil {
		return err
	}
	if rc := lib.Xsqlite3_exec(c.tls, c.db, p, 0, 0, 0); rc != lib.SQLITE_OK {
		return c.err(rc)
	}
	return nil
}

// Strings runs a query and returns the first column of every row as text.
func (c *Conn) Strings(sql string) ([]string, error) {
	st, err := c.Prepare(sql)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var out []string
	for {
		ok, err := st.Step()
		if err != nil || !ok {
			return out, err
		}
		out = append(out, st.Text(0))
	}
}

// Stmt is a prepared statement.
type Stmt struct {
	c *Conn
	p uintptr
}

// Prepare compiles one SQL statement.
func (c *Conn) Prepare(sql string) (*Stmt, error) {
	p, err := c.cstring(sql)
	if err != nil {
		return nil, err
	}
	pp := libc.Xmalloc(c.tls, 8)
	if pp == 0 {
		return nil, errors.New("sqlite: out of memory")
	}
	defer libc.Xfree(c.tls, pp)
	*cword(pp) = 0
	if rc := lib.Xsqlite3_prepare_v2(c.tls, c.db, p, -1, pp, 0); rc != lib.SQLITE_OK {
		return nil, c.err(rc)
	}
	st := *cword(pp)
	if st == 0 {
		return nil, errors.New("sqlite: empty statement")
	}
	return &Stmt{c: c, p: st}, nil
}

// Step advances to the next row; it returns false at the end or on error.
func (s *Stmt) Step() (bool, error) {
	switch rc := lib.Xsqlite3_step(s.c.tls, s.p); rc {
	case lib.SQLITE_ROW:
		return true, nil
	case lib.SQLITE_DONE:
		return false, nil
	default:
		return false, s.c.err(rc)
	}
}

// Reset rewinds the statement so it can run again with new bindings.
func (s *Stmt) Reset() error {
	if rc := lib.Xsqlite3_reset(s.c.tls, s.p); rc != lib.SQLITE_OK {
		return s.c.err(rc)
	}
	return nil
}

// Close finalizes the statement.
func (s *Stmt) Close() error {
	if s == nil || s.p == 0 {
		return nil
	}
	rc := lib.Xsqlite3_finalize(s.c.tls, s.p)
	s.p = 0
	if rc != lib.SQLITE_OK {
		return s.c.err(rc)
	}
	return nil
}

// ColumnCount is the number of result columns.
func (s *Stmt) ColumnCount() int { return int(lib.Xsqlite3_column_count(s.c.tls, s.p)) }

// ColumnName is the name of result column i.
func (s *Stmt) ColumnName(i int) string {
	return libc.GoString(lib.Xsqlite3_column_name(s.c.tls, s.p, int32(i)))
}

// Type is the storage class of a column value.
type Type int

// Storage classes.
const (
	Integer Type = lib.SQLITE_INTEGER
	Float   Type = lib.SQLITE_FLOAT
	Text    Type = lib.SQLITE_TEXT
	Blob    Type = lib.SQLITE_BLOB
	Null    Type = lib.SQLITE_NULL
)

// Type is the storage class of column i in the current row.
func (s *Stmt) Type(i int) Type { return Type(lib.Xsqlite3_column_type(s.c.tls, s.p, int32(i))) }

// IsNull reports whether column i of the current row is NULL.
func (s *Stmt) IsNull(i int) bool {
	return lib.Xsqlite3_column_type(s.c.tls, s.p, int32(i)) == lib.SQLITE_NULL
}

// Int64 is column i as an integer (SQLite's conversion rules apply).
func (s *Stmt) Int64(i int) int64 { return lib.Xsqlite3_column_int64(s.c.tls, s.p, int32(i)) }

// Int64OK is column i as an integer and whether it is not NULL. A value
// other than 0 takes one call into SQLite instead of IsNull's and Int64's
// two (SQLite reads a NULL as 0).
func (s *Stmt) Int64OK(i int) (int64, bool) {
	v := lib.Xsqlite3_column_int64(s.c.tls, s.p, int32(i))
	if v == 0 && s.IsNull(i) {
		return 0, false
	}
	return v, true
}

// Float64OK is column i as a float and whether it is not NULL, as Int64OK.
func (s *Stmt) Float64OK(i int) (float64, bool) {
	v := lib.Xsqlite3_column_double(s.c.tls, s.p, int32(i))
	if v == 0 && s.IsNull(i) {
		return 0, false
	}
	return v, true
}

// Float64 is column i as a float.
func (s *Stmt) Float64(i int) float64 { return lib.Xsqlite3_column_double(s.c.tls, s.p, int32(i)) }

// TextBytes is column i as text, without copying: the slice is valid only
// until the next Step, Reset or Close.
func (s *Stmt) TextBytes(i int) []byte {
	p := lib.Xsqlite3_column_text(s.c.tls, s.p, int32(i))
	n := lib.Xsqlite3_column_bytes(s.c.tls, s.p, int32(i))
	if p == 0 || n <= 0 {
		return nil
	}
	return cbytes(p, int(n))
}

// Text is column i as a string (a copy).
func (s *Stmt) Text(i int) string { return string(s.TextBytes(i)) }

// BindInt64 sets parameter i (1-based) to v.
func (s *Stmt) BindInt64(i int, v int64) error {
	return s.check(lib.Xsqlite3_bind_int64(s.c.tls, s.p, int32(i), v))
}

// BindFloat64 sets parameter i (1-based) to v.
func (s *Stmt) BindFloat64(i int, v float64) error {
	return s.check(lib.Xsqlite3_bind_double(s.c.tls, s.p, int32(i), v))
}

// BindNull sets parameter i (1-based) to NULL.
func (s *Stmt) BindNull(i int) error {
	return s.check(lib.Xsqlite3_bind_null(s.c.tls, s.p, int32(i)))
}

// BindText sets parameter i (1-based) to v; SQLite keeps its own copy.
func (s *Stmt) BindText(i int, v string) error {
	p, err := s.c.scratchBytes(len(v) + 1)
	if err != nil {
		return err
	}
	copy(cbytes(p, len(v)), v)
	return s.check(lib.Xsqlite3_bind_text(s.c.tls, s.p, int32(i), p, int32(len(v)), lib.SQLITE_TRANSIENT))
}

func (s *Stmt) check(rc int32) error {
	if rc != lib.SQLITE_OK {
		return s.c.err(rc)
	}
	return nil
}

func libcSize(n int) types.Size_t { return types.Size_t(n) }

// C memory (SQLite's, allocated by modernc's libc outside the Go heap) is
// addressed by uintptr; these view it from Go. The garbage collector never
// moves or frees it.

// cword is the pointer-sized word at p.
func cword(p uintptr) *uintptr { return (*uintptr)(unsafe.Add(nil, p)) }

// cbytes is the n bytes at p.
func cbytes(p uintptr, n int) []byte { return unsafe.Slice((*byte)(unsafe.Add(nil, p)), n) }
