// Package spilltest turns spilling on for a test (internal/spill), in the
// test's own temporary directory, until the test ends.
package spilltest

import (
	"reflect"
	"testing"

	"github.com/llmprof/llmprof/internal/spill"
)

// Enable turns spilling on until t ends, or skips t where spilling is not
// possible (no shared file mappings, or a spill directory that cannot hold
// them: spill.Enable says why). The budget is the caller's to set.
func Enable(t testing.TB) {
	t.Helper()
	release, err := spill.Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	t.Cleanup(release)
}

// PointerIn returns the path to the first field of typ that holds a
// pointer the collector would see (a slice, a string, a map…), from typ's
// name: what keeps typ out of spill.Slice, for the tests that pin a
// record type pointer-free.
func PointerIn(typ reflect.Type) (path string, ok bool) {
	return pointerIn(typ, typ.Name())
}

func pointerIn(typ reflect.Type, path string) (string, bool) {
	switch typ.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return "", false
	case reflect.Array:
		if typ.Len() == 0 {
			return "", false
		}
		return pointerIn(typ.Elem(), path+"[]")
	case reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			if p, ok := pointerIn(f.Type, path+"."+f.Name); ok {
				return p, true
			}
		}
		return "", false
	}
	return path + " (" + typ.String() + ")", true
}
