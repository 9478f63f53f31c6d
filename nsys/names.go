package nsys

import (
	"strconv"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// nameCache resolves StringIds ids to interned strings, fetching each id
// from the file the first time it is seen. An export's StringIds also holds
// call-chain symbols and other strings we never need, so the table is not
// loaded whole.
type nameCache struct {
	strs *ingest.Strings
	// fetch returns the StringIds value of id; ok is false when there is none.
	fetch func(id int64) (string, bool, error)
	// dense and known cache ids below denseLimit (StringIds ids are dense
	// from 0), sparse the others; missing remembers ids StringIds lacks.
	dense   []ingest.StrID
	known   []bool
	sparse  map[int64]ingest.StrID
	missing map[int64]bool
	// err is the first error reading StringIds.
	err error
}

// denseLimit bounds the slice cache; larger ids go to the map.
const denseLimit = 1 << 22

func newNameCache(strs *ingest.Strings, fetch func(int64) (string, bool, error)) *nameCache {
	return &nameCache{strs: strs, fetch: fetch, sparse: map[int64]ingest.StrID{}, missing: map[int64]bool{}}
}

// lookup returns the interned string of id; ok is false when the id is not
// in StringIds (or StringIds could not be read).
func (c *nameCache) lookup(id int64) (ingest.StrID, bool) {
	if id >= 0 && id < denseLimit {
		if int(id) < len(c.known) && c.known[id] {
			return c.dense[id], true
		}
	} else if s, ok := c.sparse[id]; ok {
		return s, true
	}
	if c.missing[id] {
		return 0, false
	}
	v, ok, err := c.fetch(id)
	if err != nil && c.err == nil {
		c.err = err
	}
	if !ok {
		c.missing[id] = true
		return 0, false
	}
	s := c.strs.Intern(v)
	if id >= 0 && id < denseLimit {
		if int(id) >= len(c.known) {
			n := max(int(id)+1, 2*len(c.known), 256)
			n = min(n, denseLimit)
			c.dense = append(c.dense, make([]ingest.StrID, n-len(c.dense))...)
			c.known = append(c.known, make([]bool, n-len(c.known))...)
		}
		c.dense[id], c.known[id] = s, true
	} else {
		c.sparse[id] = s
	}
	return s, true
}

// stringIDFetcher returns a fetch function over the file's StringIds table,
// or one that finds nothing when the table is absent.
func stringIDFetcher(c *sqlite.Conn, present bool) (fetch func(int64) (string, bool, error), closeFn func()) {
	if !present {
		return func(int64) (string, bool, error) { return "", false, nil }, func() {}
	}
	st, err := c.Prepare("SELECT value FROM StringIds WHERE id = ?")
	if err != nil {
		return func(int64) (string, bool, error) { return "", false, err }, func() {}
	}
	return func(id int64) (string, bool, error) {
		defer st.Reset()
		if err := st.BindInt64(1, id); err != nil {
			return "", false, err
		}
		ok, err := st.Step()
		if err != nil || !ok {
			return "", false, err
		}
		return st.Text(0), true, nil
	}, func() { st.Close() }
}

// unknownName is what a name id that StringIds lacks is shown as, so that
// the damage stays visible in every report.
func unknownName(strs *ingest.Strings, column string, id int64) ingest.StrID {
	return strs.Intern("[" + column + " " + strconv.FormatInt(id, 10) + " not in StringIds]")
}
