package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	log := filepath.Join(t.TempDir(), "tools.log")
	records := "1.000 0.500 compile example.com/app\n" +
		"10.000 2.000 compile big.org/lib\n" +
		"3.000 0.000 compile big.org/lib/dep\n" +
		"2.000 0.000 compile shared.org/x\n" +
		"1.500 0.000 link (link)\n"
	if err := os.WriteFile(log, []byte(records), 0o600); err != nil {
		t.Fatal(err)
	}
	cpu, err := readLog(log)
	if err != nil {
		t.Fatal(err)
	}
	g := &graph{root: "example.com/app",
		module: map[string]string{"example.com/app": "example.com/app", "big.org/lib": "big.org/lib", "big.org/lib/dep": "big.org/lib",
			"shared.org/x": "shared.org/x", "fmt": ""},
		imports: map[string][]string{"example.com/app": {"big.org/lib", "shared.org/x", "fmt"}, "big.org/lib": {"big.org/lib/dep", "shared.org/x"}}}
	var b strings.Builder
	if err := report(&b, cpu, g, []string{"big.org/lib", "shared.org", "shared.or"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"tools (compile, asm, link): 20.0 s CPU",
		"big.org/lib                                          15.0 s   75.0%",
		// shared.org/x is imported by the app too: dropping big.org/lib keeps it.
		"only through big.org/lib: 2 packages, 15.0 s CPU (75.0% of the tools' CPU)",
		"only through shared.org: 1 packages, 2.0 s CPU",
		// a prefix matches whole path elements only
		"only through shared.or: 0 packages, 0.0 s CPU",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if err := os.WriteFile(log, []byte("1.0 compile x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readLog(log); err == nil || !strings.Contains(err.Error(), log+":1") {
		t.Errorf("a bad record: %v", err)
	}
}
