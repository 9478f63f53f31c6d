package nsys

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// Every real export names its machine in TARGET_INFO_SYSTEM_ENV; the source
// carries a hash of it (hosts told apart, the name never in the model) and
// distinct machines get distinct hashes.
func TestRealFilesHostIdentity(t *testing.T) {
	seen := map[string]string{}
	for _, path := range realFiles(t) {
		rows := sqlite3Rows(t, path, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'")
		if len(rows) != 1 {
			t.Fatalf("%s: %d Hostname rows", filepath.Base(path), len(rows))
		}
		name := rows[0][0]
		tr := decodeReal(t, path)
		sum := sha256.Sum256([]byte(name))
		if got := tr.Sources[0].Host; got != hex.EncodeToString(sum[:4]) {
			t.Errorf("%s: host %q, want the hash of its Hostname", filepath.Base(path), got)
		}
		for id := 0; id < tr.Strings.Len(); id++ {
			if tr.Str(ingest.StrID(id)) == name {
				t.Errorf("%s: the host name is in the model", filepath.Base(path))
			}
		}
		if prev, ok := seen[tr.Sources[0].Host]; ok && prev != name {
			t.Errorf("%s: hosts %q and %q share a hash", filepath.Base(path), prev, name)
		}
		seen[tr.Sources[0].Host] = name
	}
	if len(seen) < 2 {
		t.Errorf("%d distinct hosts among the real exports", len(seen))
	}
}
