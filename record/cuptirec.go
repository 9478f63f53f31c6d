package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprof/llmprof/record/cupti"
)

// `record --cupti`: llmprof's own CUPTI activity injection library
// (record/cupti/inject/llmprof_cupti.c), built from the embedded source with
// the system C compiler against the CUDA toolkit found ($CUDA_HOME,
// $CUDA_PATH, /usr/local/cuda) into the capture's cupti/ folder, and loaded
// into every CUDA process of the command by the driver
// (CUDA_INJECTION64_PATH). Each process writes cupti/cupti-<pid>.lpcupti;
// the capture reader decodes them (record/cupti/decode.go).

// CUPTIDir is the capture's folder of the library, its build log and the
// files it writes.
const CUPTIDir = "cupti"

// CUPTIOptions configure `record --cupti`.
type CUPTIOptions struct {
	Enabled bool `json:"enabled"`
	// FlushInterval is how often the library moves CUPTI's completed
	// buffers to its file and writes a clock pair (default 2 s).
	FlushInterval time.Duration `json:"flush_interval,omitempty"`
	// build replaces the toolkit search and the build in tests: it puts a
	// library into dir and returns its path.
	build func(dir string) (string, error)
}

// CUPTIInfo is the manifest's account of --cupti.
type CUPTIInfo struct {
	// Toolkit is the CUDA toolkit the library was built against, Library
	// its libcupti; Built is the library, relative to the capture.
	Toolkit string `json:"toolkit"`
	Library string `json:"libcupti"`
	Built   string `json:"library"`
	// Files are the activity files, one per CUDA process.
	Files []CUPTIFile `json:"files"`
	Error string      `json:"error,omitempty"`
}

// CUPTIFile is one process's activity file.
type CUPTIFile struct {
	Path  string `json:"path"`
	Pid   int    `json:"pid"`
	Bytes int64  `json:"bytes"`
}

// CUPTIConflict says why --cupti cannot run beside nsys or the PyTorch
// profiler, or nil: each traces CUDA through CUPTI, and a process has one
// CUPTI client. The command checks it before anything starts; Record
// checks it again for callers of the package.
func CUPTIConflict(nsys, torchProfiler bool) error {
	switch {
	case nsys:
		return errors.New("--cupti and --nsys both trace CUDA through CUPTI, and a process has one CUPTI client: choose one")
	case torchProfiler:
		return errors.New("--cupti and --torch-profiler both trace CUDA through CUPTI (the PyTorch profiler is Kineto over CUPTI), and a process has one CUPTI client: choose one")
	}
	return nil
}

// checkCUPTI refuses what cannot work before anything starts: a process has
// one CUPTI activity client, so --cupti excludes --nsys and --torch-profiler
// (both trace through CUPTI), and an injection library the user already set
// would be replaced.
func checkCUPTI(o *Options) (*cuptiBuilder, error) {
	if err := CUPTIConflict(o.Nsys, o.TorchProfiler.Enabled); err != nil {
		return nil, err
	}
	if v := os.Getenv("CUDA_INJECTION64_PATH"); v != "" {
		return nil, fmt.Errorf("--cupti: CUDA_INJECTION64_PATH is already set (%s); unset it to let record load its own library", v)
	}
	if o.CUPTI.build != nil {
		return &cuptiBuilder{build: o.CUPTI.build, toolkit: "(test)", lib: "(test)"}, nil
	}
	tk, err := cupti.FindToolkit(os.Getenv)
	if err != nil {
		return nil, err
	}
	cc, err := cupti.Compiler(os.Getenv)
	if err != nil {
		return nil, err
	}
	// LLMPROF_CUPTI_CFLAGS adds compiler flags, e.g. the -DLLMP_MEMSET_T=…
	// overrides of the record types llmprof_cupti.c picks by CUPTI version.
	extra := strings.Fields(os.Getenv("LLMPROF_CUPTI_CFLAGS"))
	return &cuptiBuilder{toolkit: tk.Root, lib: tk.Lib,
		build: func(dir string) (string, error) { return cupti.Build(cc, tk, dir, extra...) }}, nil
}

// cuptiBuilder builds the library once the capture exists.
type cuptiBuilder struct {
	build        func(dir string) (string, error)
	toolkit, lib string
}

// buildCUPTI builds the library into the capture and returns the variables
// that load it into the command.
func (r *recording) buildCUPTI(b *cuptiBuilder) (map[string]string, error) {
	dir := filepath.Join(r.dir, CUPTIDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--cupti: %w", err)
	}
	t0 := time.Now()
	lib, err := b.build(dir)
	if err != nil {
		return nil, fmt.Errorf("--cupti: %w", err)
	}
	r.manifest.External.CUPTI = &CUPTIInfo{Toolkit: b.toolkit, Library: b.lib, Built: relTo(r.dir, lib), Files: []CUPTIFile{}}
	r.event("cupti_build", fmt.Sprintf("%s against %s in %s", relTo(r.dir, lib), b.toolkit, time.Since(t0).Round(time.Millisecond)), nil)
	env := map[string]string{
		"CUDA_INJECTION64_PATH": absPath(lib),
		"LLMPROF_CUPTI_DIR":     absPath(dir),
	}
	if d := r.opts.CUPTI.FlushInterval; d > 0 {
		env["LLMPROF_CUPTI_FLUSH_MS"] = strconv.FormatInt(max(d.Milliseconds(), 10), 10)
	}
	return env, nil
}

// finishCUPTI lists the activity files in the manifest.
func (r *recording) finishCUPTI() {
	info := r.manifest.External.CUPTI
	if info == nil {
		return
	}
	files, _ := filepath.Glob(filepath.Join(r.dir, CUPTIDir, cupti.FilePattern))
	slices.Sort(files)
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "cupti-"), cupti.FileExt))
		info.Files = append(info.Files, CUPTIFile{Path: relTo(r.dir, f), Pid: pid, Bytes: st.Size()})
	}
	if len(info.Files) == 0 {
		info.Error = "no process wrote a CUPTI activity file: the command initialized no CUDA, or the library did not load (its messages start with llmprof-cupti: on the command's stderr)"
		fmt.Fprintf(r.opts.Log, "llmprof record: --cupti: %s\n", info.Error)
	}
	r.event("cupti_files", fmt.Sprintf("%d activity files in %s", len(info.Files), CUPTIDir), nil)
}
