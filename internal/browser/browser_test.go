package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConsoleMessages(t *testing.T) {
	p := &Page{Log: strings.Join([]string{
		`[1:1:1201/103250.005765:WARNING:media/gpu/vaapi/vaapi_wrapper.cc:1655] drmGetDevices2() has not found any devices`,
		`[1:1:1201/103250.524433:INFO:CONSOLE:1] "boom", source: file:///tmp/x.html (1)`,
		`[1:1:1201/103250.524498:INFO:CONSOLE:1] "Uncaught ReferenceError: f is not defined", source: file:///tmp/x.html (1)`,
	}, "\n")}
	got := p.ConsoleMessages()
	if len(got) != 2 || !strings.Contains(got[1], "Uncaught ReferenceError") {
		t.Errorf("ConsoleMessages = %q", got)
	}
}

// TestLoadReportsPageErrors: a real Chromium reports a page's uncaught
// exception on the console, where ConsoleMessages finds it.
func TestLoadReportsPageErrors(t *testing.T) {
	bin, err := Find()
	if err != nil {
		t.Skip("skipped: ", err)
	}
	page := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(page, []byte(`<html><body><p id="x">x</p><script>undefinedFunction();</script></body></html>`), 0o644)
	p, err := Load(context.Background(), bin, page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.DOM, `id="x"`) {
		t.Errorf("DOM %q", p.DOM)
	}
	if msgs := p.ConsoleMessages(); len(msgs) != 1 || !strings.Contains(msgs[0], "undefinedFunction") {
		t.Errorf("console messages %q, want the uncaught ReferenceError", msgs)
	}
}
