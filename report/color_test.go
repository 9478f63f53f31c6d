package report

import "testing"

// no-color.org: NO_COLOR present and not empty turns colour off; colour is
// only ever for a terminal.
func TestColorFor(t *testing.T) {
	for _, tc := range []struct {
		env  string
		set  bool
		tty  bool
		want bool
	}{
		{tty: true, want: true},
		{tty: false, want: false},
		{env: "1", set: true, tty: true, want: false},
		{env: "", set: true, tty: true, want: true},
	} {
		if tc.set {
			t.Setenv("NO_COLOR", tc.env)
		}
		if got := ColorFor(tc.tty); got != tc.want {
			t.Errorf("NO_COLOR=%q (set %v), tty %v: colour %v, want %v", tc.env, tc.set, tc.tty, got, tc.want)
		}
	}
}
