package record

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/llmprof/llmprof/ingest"
)

// sentinel is what the files outside every test capture hold: if any of it
// shows up in a warning or an error, the reader read outside the capture.
const sentinel = "OUTSIDE-SENTINEL-7f3a9c"

// confinedLayout is a capture directory next to a directory it must never
// read: tmp/outside/{secret,gpu.nsys.sqlite} and tmp/cap.llmprof.
type confinedLayout struct {
	cap, outside string
	opens        func() []string // files opened in outside since the watch began
}

// inotifyFD is one inotify instance for the whole test process: creating
// and closing one per fuzz input costs a kernel grace period each time.
var inotifyFD = sync.OnceValues(func() (int, error) {
	return unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
})

// inotifyMu serializes reading the shared instance.
var inotifyMu sync.Mutex

// newConfinedLayout creates both directories and watches outside with
// inotify: every open(2) of a file there is an IN_OPEN event, whoever makes
// it, so the check does not rely on the code under test.
func newConfinedLayout(t testing.TB) *confinedLayout {
	t.Helper()
	tmp := t.TempDir()
	l := &confinedLayout{cap: filepath.Join(tmp, "cap.llmprof"), outside: filepath.Join(tmp, "outside")}
	for _, d := range []string{l.cap, l.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"secret", "gpu.nsys.sqlite"} {
		if err := os.WriteFile(filepath.Join(l.outside, name), []byte(sentinel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fd, err := inotifyFD()
	if err != nil {
		t.Skipf("inotify unavailable (%v): cannot watch for reads outside the capture", err)
	}
	wd, err := unix.InotifyAddWatch(fd, l.outside, unix.IN_OPEN|unix.IN_ACCESS)
	if err != nil {
		t.Skipf("inotify watch: %v", err)
	}
	t.Cleanup(func() { unix.InotifyRmWatch(fd, uint32(wd)) })
	l.opens = func() []string {
		inotifyMu.Lock()
		defer inotifyMu.Unlock()
		var names []string
		buf := make([]byte, 64<<10)
		for {
			n, err := unix.Read(fd, buf)
			if n <= 0 || err != nil {
				return names
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)], "\x00"))
				// Events of other layouts' watches (and their removal)
				// share the instance; only this watch's opens count.
				if ev.Wd == int32(wd) && ev.Mask&(unix.IN_OPEN|unix.IN_ACCESS) != 0 {
					names = append(names, name)
				}
				off += unix.SizeofInotifyEvent + int(ev.Len)
			}
		}
	}
	return l
}

// byNameDecoder stands in for the nsys decoder, which hands the path to
// SQLite: it claims every input and reads it by name.
type byNameDecoder struct{ read *[]string }

func (byNameDecoder) Name() string                { return "nsys" }
func (byNameDecoder) Sniff(in *ingest.Input) bool { return true }
func (d byNameDecoder) Decode(_ context.Context, in *ingest.Input, t *ingest.Trace) error {
	b, err := os.ReadFile(in.Path)
	if err != nil {
		return err
	}
	*d.read = append(*d.read, string(b))
	return nil
}

// decodeConfined decodes dir with a deadline: a reader that blocks on a FIFO
// or spins on /dev/zero fails the test instead of hanging it.
func decodeConfined(t testing.TB, dir string) (tr *ingest.Trace, embeddedRead []string, err error) {
	t.Helper()
	tr = ingest.New()
	tr.Sources = []ingest.Source{{Path: dir, Format: "capture"}}
	dec := &CaptureDecoder{Embedded: []ingest.Decoder{byNameDecoder{&embeddedRead}}}
	in := &ingest.Input{Path: dir, Dir: true}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if dec.Sniff(in) {
			err = dec.Decode(context.Background(), in, tr)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("reading %s did not finish in 20 s", dir)
	}
	return tr, embeddedRead, err
}

// checkNothingOutside fails if the outside directory was opened or its
// content reached a message.
func (l *confinedLayout) checkNothingOutside(t testing.TB, tr *ingest.Trace, embedded []string, err error) {
	t.Helper()
	if opened := l.opens(); len(opened) > 0 {
		t.Errorf("files outside the capture were opened: %q", opened)
	}
	var texts []string
	if err != nil {
		texts = append(texts, err.Error())
	}
	for _, w := range tr.Warnings.List {
		texts = append(texts, w.Msg)
	}
	texts = append(texts, embedded...)
	for _, s := range texts {
		// The text, or its first bytes as a "not an Arrow stream (starts
		// with …)" message would print them.
		if strings.Contains(s, "OUTSIDE-SENTINEL") || strings.Contains(s, "4f 55 54 53") {
			t.Errorf("outside content in %q", s)
		}
	}
}

func warningsWith(tr *ingest.Trace, code string) []string {
	var out []string
	for _, w := range tr.Warnings.List {
		if w.Code == code {
			out = append(out, w.Msg)
		}
	}
	return out
}

func TestOpenInCapture(t *testing.T) {
	l := newConfinedLayout(t)
	write := func(name, content string) {
		os.MkdirAll(filepath.Dir(filepath.Join(l.cap, name)), 0o755)
		if err := os.WriteFile(filepath.Join(l.cap, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(name, target string) {
		if err := os.Symlink(target, filepath.Join(l.cap, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("a.arrows", "inside")
	write("sub/b.arrows", "inside too")
	link("in-link", "sub/b.arrows")
	link("in-dotdot-link", "sub/../a.arrows")
	link("out-rel", "../outside/secret")
	link("out-abs", filepath.Join(l.outside, "secret"))
	link("abs-inside", filepath.Join(l.cap, "a.arrows"))
	link("zero", "/dev/zero")
	link("sub/up", "../../outside/secret")
	link("dirlink", "../outside")
	if err := syscall.Mkfifo(filepath.Join(l.cap, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	link("fifo-link", "fifo")
	os.Mkdir(filepath.Join(l.cap, "dir"), 0o755)

	for _, tc := range []struct {
		path string
		want error // nil: opens, reads "inside..."
	}{
		{"a.arrows", nil},
		{"sub/b.arrows", nil},
		{"in-link", nil},
		{"in-dotdot-link", nil},
		{"sub/../a.arrows", nil}, // lexically inside
		{"../outside/secret", ErrOutsideCapture},
		{filepath.Join(l.outside, "secret"), ErrOutsideCapture},
		{"out-rel", ErrOutsideCapture},
		{"out-abs", ErrOutsideCapture},
		{"abs-inside", ErrOutsideCapture}, // an absolute target is not followed, even to inside
		{"zero", ErrOutsideCapture},
		{"sub/up", ErrOutsideCapture},
		{"dirlink/secret", ErrOutsideCapture},
		{"", ErrOutsideCapture},
		{"fifo", ErrNotRegular},
		{"fifo-link", ErrNotRegular},
		{"dir", ErrNotRegular},
		{"missing", os.ErrNotExist},
		{"fifo/x", syscall.ENOTDIR}, // a FIFO as a directory is not opened either
	} {
		t.Run(tc.path, func(t *testing.T) {
			f, err := openInCapture(l.cap, tc.path)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var buf bytes.Buffer
				buf.ReadFrom(f)
				if !strings.HasPrefix(buf.String(), "inside") {
					t.Fatalf("read %q", buf.String())
				}
				return
			}
			var pe *PathError
			if !errors.Is(err, tc.want) || !errors.As(err, &pe) || pe.Path != tc.path {
				t.Fatalf("err = %v, want a PathError for %q wrapping %v", err, tc.path, tc.want)
			}
		})
	}
	l.checkNothingOutside(t, ingest.New(), nil, nil)
}

// Crafted manifests and tables: every way a shared capture could point
// outside itself, or at something that never ends, is a named warning (or,
// for the manifest itself, an error), and nothing outside is opened.
func TestCaptureConfined(t *testing.T) {
	pb, _ := testTraces(2).MarshalProto()
	build := func(t *testing.T, l *confinedLayout, edit func(b *captureBuilder)) {
		t.Helper()
		b := &captureBuilder{t: t, dir: l.cap, m: newCaptureBuilder(t, StatusComplete).m}
		writeRows(b, otlpSchema, OTLPPayload{Signal: SignalTraces, Payload: pb})
		writeRows(b, clockSchema, ClockPair{Label: "start", MonoNs: 1, RealLoNs: 10, RealHiNs: 12})
		edit(b)
		b.finish()
	}
	replaceWithLink := func(t *testing.T, l *confinedLayout, name, target string) {
		t.Helper()
		os.Remove(filepath.Join(l.cap, name))
		if err := os.Symlink(target, filepath.Join(l.cap, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, l *confinedLayout)
		// wantCode is the warning expected; wantErr, when set, the
		// decode error instead.
		wantCode string
		wantErr  error
		spans    int
	}{
		{"files[].path climbs out", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {
				b.m.Files = append(b.m.Files, FileInfo{Path: "../../outside/secret", Table: "x", Bytes: int64(len(sentinel)), SHA256: sha256Hex(sentinel)})
				b.m.Files = append(b.m.Files, FileInfo{Path: "../outside/secret", Table: "x", Bytes: 1, SHA256: "00"})
			})
		}, "capture-unsafe-path", nil, 2},
		{"files[].path absolute", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {
				b.m.Files = append(b.m.Files, FileInfo{Path: filepath.Join(l.outside, "secret"), Table: "x", Bytes: int64(len(sentinel)), SHA256: sha256Hex(sentinel)})
			})
		}, "capture-unsafe-path", nil, 2},
		{"files[].path /dev/zero", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {
				b.m.Files = append(b.m.Files, FileInfo{Path: "/dev/zero", Table: "x", Bytes: 1 << 40, SHA256: "00"})
			})
		}, "capture-unsafe-path", nil, 2},
		{"files[].path a FIFO", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {
				syscall.Mkfifo(filepath.Join(l.cap, "pipe"), 0o644)
				b.m.Files = append(b.m.Files, FileInfo{Path: "pipe", Table: "x", Bytes: 10, SHA256: "00"})
			})
		}, "capture-unsafe-path", nil, 2},
		{"nsys export outside", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {
				b.m.External.Nsys = &NsysInfo{SQLite: "../outside/gpu.nsys.sqlite"}
			})
		}, "capture-unsafe-path", nil, 2},
		{"nsys export through a symlink out", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {
				os.Mkdir(filepath.Join(l.cap, "nsys"), 0o755)
				os.Symlink("../../outside/gpu.nsys.sqlite", filepath.Join(l.cap, "nsys", "report.sqlite"))
				b.m.External.Nsys = &NsysInfo{SQLite: "nsys/report.sqlite"}
			})
		}, "capture-unsafe-path", nil, 2},
		{"nsys export a FIFO", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {
				syscall.Mkfifo(filepath.Join(l.cap, "report.sqlite"), 0o644)
				b.m.External.Nsys = &NsysInfo{SQLite: "report.sqlite"}
			})
		}, "capture-unsafe-path", nil, 2},
		{"table symlinked out", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {})
			replaceWithLink(t, l, TableFile(TableOTLP), "../outside/secret")
		}, "capture-unsafe-path", nil, 0},
		{"table symlinked to /dev/zero", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {})
			replaceWithLink(t, l, TableFile(TableGPUDevice), "/dev/zero")
		}, "capture-unsafe-path", nil, 2},
		{"table is a FIFO", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {})
			if err := syscall.Mkfifo(filepath.Join(l.cap, TableFile(TableGPUProcess)), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "capture-unsafe-path", nil, 2},
		{"table symlinked inside is read", func(t *testing.T, l *confinedLayout) {
			build(t, l, func(b *captureBuilder) {})
			os.Rename(filepath.Join(l.cap, TableFile(TableOTLP)), filepath.Join(l.cap, "kept.arrows"))
			replaceWithLink(t, l, TableFile(TableOTLP), "kept.arrows")
		}, "", nil, 2},
		{"manifest symlinked out", func(t *testing.T, l *confinedLayout) {
			os.WriteFile(filepath.Join(l.outside, "manifest.json"), []byte(`{"format":"llmprof-capture"}`), 0o644)
			l.opens() // the setup's own write
			os.Symlink("../outside/manifest.json", filepath.Join(l.cap, ManifestFile))
		}, "", ErrOutsideCapture, 0},
		{"manifest is a FIFO", func(t *testing.T, l *confinedLayout) {
			syscall.Mkfifo(filepath.Join(l.cap, ManifestFile), 0o644)
		}, "", ErrNotRegular, 0},
		{"manifest is /dev/zero", func(t *testing.T, l *confinedLayout) {
			os.Symlink("/dev/zero", filepath.Join(l.cap, ManifestFile))
		}, "", ErrOutsideCapture, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newConfinedLayout(t)
			tc.setup(t, l)
			tr, embedded, err := decodeConfined(t, l.cap)
			l.checkNothingOutside(t, tr, embedded, err)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := warningsWith(tr, tc.wantCode)
			if tc.wantCode != "" && len(got) == 0 {
				t.Fatalf("no %s warning in %v", tc.wantCode, tr.Warnings.List)
			}
			if tc.wantCode == "" && len(tr.Warnings.List) > 0 {
				t.Fatalf("warnings %v", tr.Warnings.List)
			}
			if len(tr.Spans) != tc.spans || len(embedded) != 0 && tc.wantCode != "" {
				t.Fatalf("%d spans (want %d), embedded read %d", len(tr.Spans), tc.spans, len(embedded))
			}
			t.Logf("%v", got)
		})
	}
}

// A finished capture's tables are read no further than the manifest says:
// bytes appended afterwards are not taken in (and the checksum check says
// the file changed).
func TestCaptureReadsBoundedByManifest(t *testing.T) {
	b := newCaptureBuilder(t, StatusComplete)
	pb, _ := testTraces(1).MarshalProto()
	writeRows(b, otlpSchema, OTLPPayload{Signal: SignalTraces, Payload: pb}, OTLPPayload{Signal: SignalTraces, Payload: pb},
		OTLPPayload{Signal: SignalTraces, Payload: pb})
	full := b.m.Files[0].Bytes
	dir := b.finish()
	// Claim the table ended sooner: a reader that trusted the file's own
	// size would read all three rows.
	var m Manifest
	data, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	json.Unmarshal(data, &m)
	m.Files[0].Bytes = full / 2
	writeManifest(dir, &m)
	tr := decodeCapture(t, dir, &CaptureDecoder{})
	if len(tr.Spans) >= 3 || !hasWarning(tr, "capture-truncated-table") || !hasWarning(tr, "capture-checksum") {
		t.Fatalf("%d spans, warnings %v", len(tr.Spans), tr.Warnings.List)
	}
}

// FuzzCaptureConfined builds capture directories from fuzzed manifests and
// layouts — regular files, symlinks to inside, to outside, to /dev/zero,
// FIFOs, directories, under the names the reader opens — and checks that
// decoding never opens a file outside (inotify on the outside directory),
// never lets outside content into a message, and never hangs.
func FuzzCaptureConfined(f *testing.F) {
	b := newCaptureBuilder(f, StatusComplete)
	pb, _ := testTraces(2).MarshalProto()
	writeRows(b, otlpSchema, OTLPPayload{Signal: SignalTraces, Payload: pb})
	table, _ := os.ReadFile(filepath.Join(b.dir, TableFile(TableOTLP)))
	seed := b.m
	seed.Files = append(seed.Files, FileInfo{Path: "../outside/secret", Bytes: int64(len(sentinel)), SHA256: sha256Hex(sentinel)})
	seed.External.Nsys = &NsysInfo{SQLite: "../outside/gpu.nsys.sqlite"}
	m1, _ := json.Marshal(seed)
	seed.Files[len(seed.Files)-1].Path = "link"
	seed.External.Nsys.SQLite = "nsys/report.sqlite"
	m2, _ := json.Marshal(seed)
	f.Add(m1, []byte{0, 1, 0})
	f.Add(m2, []byte{1, 8, 0, 1, 5, 1, 2, 1, 2})
	f.Add(m2, []byte{1, 1, 0, 2, 2, 0, 1, 6, 3, 3, 7, 0, 1, 0, 4})
	f.Add([]byte(`{"format":"llmprof-capture","status":"recording","files":[{"path":"/dev/zero","sha256":"0"}]}`), []byte{2, 1, 0})

	names := []string{ManifestFile, TableFile(TableOTLP), TableFile(TableClock), TableFile(TableGPUDevice),
		"nsys/report.sqlite", "nsys", "link", "sub/x", "sub"}
	f.Fuzz(func(t *testing.T, manifest, layout []byte) {
		l := newConfinedLayout(t)
		targets := []string{"../outside/secret", filepath.Join(l.outside, "secret"), "/dev/zero", TableFile(TableOTLP),
			"../outside", "..", "sub/../../outside/gpu.nsys.sqlite", filepath.Join(l.cap, TableFile(TableOTLP)), "nsys", "link"}
		os.WriteFile(filepath.Join(l.cap, ManifestFile), manifest, 0o644)
		for i := 0; i+2 < len(layout) && i < 30; i += 3 {
			kind, name, target := layout[i]%5, names[int(layout[i+1])%len(names)], targets[int(layout[i+2])%len(targets)]
			p := filepath.Join(l.cap, name) // names are fixed and local
			os.MkdirAll(filepath.Dir(p), 0o755)
			// Only under a real directory: through a symlinked one the
			// harness would write outside, and under a FIFO os.RemoveAll
			// blocks opening it.
			if st, err := os.Lstat(filepath.Dir(p)); err != nil || !st.IsDir() {
				continue
			}
			os.RemoveAll(p)
			switch kind {
			case 0:
				os.WriteFile(p, table, 0o644)
			case 1:
				os.Symlink(target, p)
			case 2:
				syscall.Mkfifo(p, 0o644)
			case 3:
				os.Mkdir(p, 0o755)
			case 4:
				os.WriteFile(p, []byte("SQLite format 3\x00 inside"), 0o644)
			}
		}
		// The harness's own writes may pass through a symlink it made to
		// outside; only what the reader does counts.
		l.opens()
		tr, embedded, err := decodeConfined(t, l.cap)
		l.checkNothingOutside(t, tr, embedded, err)
	})
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
