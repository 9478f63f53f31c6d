package attribution

import (
	"math/rand/v2"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// A lookup through the index of a span's attributes (keyCache.index) finds
// what a scan finds, for every list of the package and a command-line list:
// the first present name of the list that the attributes hold, and its
// first attribute when the key repeats.
func TestKeyIndexMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tr := ingest.New()
	// Every name of every list, and some others, as keys.
	var names []ingest.StrID
	for _, l := range packageKeyLists {
		for _, n := range l.names {
			if rng.IntN(4) > 0 { // some names absent from the trace
				names = append(names, tr.Strings.Intern(n))
			}
		}
	}
	for i := range 20 {
		names = append(names, tr.Strings.Intern("other."+string(rune('a'+i))))
	}
	indexed, scanned := newKeyCache(tr), newKeyCache(tr)
	tenant := indexed.list("tenant.custom", "llm.model_id")
	scanned.list("tenant.custom", "llm.model_id")
	tr.Strings.Intern("tenant.custom")
	for range 2000 {
		attrs := make([]ingest.Attr, rng.IntN(30))
		for i := range attrs {
			attrs[i] = ingest.NewAttr(names[rng.IntN(len(names))], ingest.IntValue(int64(i)))
		}
		indexed.index(attrs)
		if indexed.tableState != 1 {
			t.Fatalf("no index: %d names in the package's lists, the table takes %d", len(indexed.rec), keyTableSize/2)
		}
		for _, l := range append(packageKeyLists[:len(packageKeyLists):len(packageKeyLists)], tenant) {
			gn, gv, gok := indexed.first(attrs, l)
			wn, wv, wok := scanned.first(attrs, l)
			if gn != wn || gv != wv || gok != wok {
				t.Fatalf("list %v on %d attributes: indexed %q %v %v, scanned %q %v %v", l.names, len(attrs), gn, gv, gok, wn, wv, wok)
			}
		}
	}
}
