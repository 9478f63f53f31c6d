package spilltest

import (
	"reflect"
	"testing"
)

// The walk finds a pointer where there is one, and names its path.
func TestPointerIn(t *testing.T) {
	type flat struct {
		A int64
		B [2]struct{ C uint32 }
	}
	type withSlice struct {
		A int64
		B [2]struct{ C []flat }
	}
	if path, ok := PointerIn(reflect.TypeFor[flat]()); ok {
		t.Errorf("PointerIn(flat) = %q, true", path)
	}
	if path, ok := PointerIn(reflect.TypeFor[withSlice]()); !ok || path != "withSlice.B[].C ([]spilltest.flat)" {
		t.Errorf("PointerIn(withSlice) = %q, %v", path, ok)
	}
}
