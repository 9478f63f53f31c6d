package sqlite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a b.sqlite") // a space must survive the URI
	c, err := OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exec("CREATE TABLE t(i INTEGER, f REAL, s TEXT); CREATE TABLE u(x)"); err != nil {
		t.Fatal(err)
	}
	ins, err := c.Prepare("INSERT INTO t VALUES(?, ?, ?)")
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		i    int64
		f    float64
		s    string
		null bool
	}{
		{-1 << 62, 1.5, "héllo", false},
		{0, 0, "", false},
		{42, -2.25, strings.Repeat("x", 1000), true},
	}
	for _, r := range rows {
		if err := ins.BindInt64(1, r.i); err != nil {
			t.Fatal(err)
		}
		if err := ins.BindFloat64(2, r.f); err != nil {
			t.Fatal(err)
		}
		if r.null {
			err = ins.BindNull(3)
		} else {
			err = ins.BindText(3, r.s)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ins.Step(); err != nil {
			t.Fatal(err)
		}
		if err := ins.Reset(); err != nil {
			t.Fatal(err)
		}
	}
	if err := ins.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	q, err := r.Prepare("SELECT i, f, s FROM t ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.ColumnCount() != 3 || q.ColumnName(2) != "s" {
		t.Fatalf("columns: %d %q", q.ColumnCount(), q.ColumnName(2))
	}
	for n := 0; ; n++ {
		ok, err := q.Step()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			if n != len(rows) {
				t.Fatalf("read %d rows, want %d", n, len(rows))
			}
			break
		}
		want := rows[n]
		if q.Int64(0) != want.i || q.Float64(1) != want.f || q.IsNull(2) != want.null || (!want.null && q.Text(2) != want.s) {
			t.Errorf("row %d = %d %g %q null=%v", n, q.Int64(0), q.Float64(1), q.Text(2), q.IsNull(2))
		}
		if q.Type(0) != Integer || q.Type(1) != Float {
			t.Errorf("row %d types %d %d", n, q.Type(0), q.Type(1))
		}
	}
	if err := r.Exec("INSERT INTO u VALUES(1)"); err == nil {
		t.Error("insert into a read-only database succeeded")
	}
	if _, err := r.Prepare("SELECT nope FROM t"); err == nil || !strings.Contains(err.Error(), "no such column: nope") {
		t.Errorf("prepare error = %v", err)
	}
}

func TestNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk")
	if err := os.WriteFile(path, []byte(strings.Repeat("not sqlite ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := OpenReadOnly(path)
	if err == nil {
		// SQLite opens lazily; the first read finds out.
		defer c.Close()
		_, err = c.Prepare("SELECT name FROM sqlite_master")
	}
	if !IsCorrupt(err) {
		t.Fatalf("error = %v, want a not-a-database error", err)
	}
}
