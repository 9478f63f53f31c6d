// Package browser drives a headless Chromium for the tests that check the
// HTML report in a real browser (internal/driver/html_test.go): it loads a
// page, returns the DOM after its scripts ran and the browser's console log,
// and takes screenshots. Tests skip when no Chromium is installed (.ci/run
// installs Debian's chromium package).
package browser

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ErrNotFound is returned by Find when no Chromium binary is on PATH and
// $LLMPROF_CHROMIUM is unset.
var ErrNotFound = errors.New("no headless Chromium found (install Debian's chromium package, or set LLMPROF_CHROMIUM to the binary)")

// Find returns the Chromium binary: $LLMPROF_CHROMIUM, else the first of
// chromium, chromium-browser, google-chrome, headless_shell on PATH.
func Find() (string, error) {
	if p := os.Getenv("LLMPROF_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// Page is the result of loading a page.
type Page struct {
	// DOM is the serialized document after the page's scripts ran.
	DOM string
	// Log is Chromium's stderr with logging enabled: console messages and
	// uncaught exceptions of the page appear here as "CONSOLE" lines.
	Log string
}

// ConsoleMessages returns the log lines of the page's console: its
// console.log/console.error calls and its uncaught exceptions ("Uncaught
// ReferenceError: …"). Chromium logs them all at INFO level, so they are not
// told apart here; a page that logs nothing returns none. Chromium's own
// start-up noise (dbus, GPU process) is not about the page and is left out.
func (p *Page) ConsoleMessages() []string {
	var out []string
	for _, l := range strings.Split(p.Log, "\n") {
		if strings.Contains(l, ":CONSOLE") {
			out = append(out, l)
		}
	}
	return out
}

// Load opens a local file and returns its DOM once loaded.
func Load(ctx context.Context, bin, file string) (*Page, error) {
	return load(ctx, bin, file)
}

// load is Load with the browser's extra arguments.
func load(ctx context.Context, bin, file string, extra ...string) (*Page, error) {
	stdout, stderr, err := run(ctx, bin, file, append([]string{"--dump-dom", "--enable-logging=stderr", "--v=0"}, extra...)...)
	if err != nil {
		return nil, err
	}
	return &Page{DOM: stdout, Log: stderr}, nil
}

// Screenshot asks a start of the browser for a PNG of the page at Path,
// taken at a Width×Height viewport (the DOM is then laid out at that size).
type Screenshot struct {
	Path          string
	Width, Height int
}

// LoadWithScreenshot is Load and a screenshot in one start of the browser
// (each start costs about 0.65 s of CPU, 2.6–3 s on a guest where process
// starts and page faults are dear): the DOM once loaded, at the
// screenshot's viewport size, and a PNG of the page at png.
func LoadWithScreenshot(ctx context.Context, bin, file, png string, width, height int) (*Page, error) {
	return loadShot(ctx, bin, file, &Screenshot{Path: png, Width: width, Height: height})
}

// loadShot is Load, with the screenshot shot when it is not nil.
func loadShot(ctx context.Context, bin, file string, shot *Screenshot) (*Page, error) {
	if shot == nil {
		return load(ctx, bin, file)
	}
	abs, err := filepath.Abs(shot.Path)
	if err != nil {
		return nil, err
	}
	page, err := load(ctx, bin, file, "--screenshot="+abs, fmt.Sprintf("--window-size=%d,%d", shot.Width, shot.Height), "--hide-scrollbars")
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(abs); err != nil || st.Size() == 0 {
		return nil, fmt.Errorf("chromium wrote no screenshot to %s", abs)
	}
	return page, nil
}

func run(ctx context.Context, bin, file string, args ...string) (string, string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", "", err
	}
	profile, err := os.MkdirTemp("", "llmprof-chromium-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	full := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--disable-background-networking", "--user-data-dir=" + profile,
	}, args...)
	full = append(full, "file://"+abs)
	cmd := exec.CommandContext(ctx, bin, full...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("%s: %w\n%s", bin, err, tail(errOut.String(), 2000))
	}
	return out.String(), errOut.String(), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// HTMLAttr returns the value of the attribute name on the <html> element of
// a DOM ("" when it has none): the report's script leaves its results there
// (data-rendered, data-charts, data-errors).
func HTMLAttr(dom, name string) string {
	m := regexp.MustCompile(`<html[^>]*\b` + regexp.QuoteMeta(name) + `="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		return ""
	}
	return m[1]
}

// RenderedCleanly loads the page at path in headless Chromium, when there
// is one (else it logs the skip), and checks that its script ran to its end
// (data-rendered on <html>) without a console message.
func RenderedCleanly(t testing.TB, path, what string) {
	t.Helper()
	bin, err := Find()
	if err != nil {
		t.Logf("%s: browser part skipped: %v", what, err)
		return
	}
	p, err := Load(context.Background(), bin, path)
	if err != nil {
		t.Fatal(err)
	}
	if HTMLAttr(p.DOM, "data-rendered") != "true" {
		t.Errorf("%s: the page's script did not finish", what)
	}
	if msgs := p.ConsoleMessages(); len(msgs) > 0 {
		t.Errorf("%s: console: %s", what, strings.Join(msgs, "\n"))
	}
}

var svgRE = regexp.MustCompile(`(?s)<svg\b.*?</svg>`)

// SVGCharts returns the inline SVG charts of an HTML page, failing the test
// when one is not well-formed XML (a browser would draw it wrong or not at
// all, without an error).
func SVGCharts(t testing.TB, page []byte) [][]byte {
	t.Helper()
	charts := svgRE.FindAll(page, -1)
	for i, s := range charts {
		d := xml.NewDecoder(bytes.NewReader(s))
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("chart %d is not well-formed SVG: %v\n%.300s", i, err, s)
			}
		}
	}
	return charts
}
