package causal

import "testing"

func TestIndependentColumns(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5}
	b := []float64{2, 1, 0, 1, 2}
	tests := []struct {
		name string
		cols [][]float64
		want []bool
	}{
		{"independent", [][]float64{constant(5), a, b}, []bool{true, true, true}},
		{"multiple", [][]float64{constant(5), a, {3, 6, 9, 12, 15}}, []bool{true, true, false}},
		{"sum of earlier", [][]float64{a, b, {3, 3, 3, 5, 7}}, []bool{true, true, false}},
		{"zero", [][]float64{constant(5), make([]float64, 5), a}, []bool{true, false, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := independent(tc.cols, 1e-8)
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("keep = %v, want %v", got, tc.want)
				}
			}
		})
	}
}
