package cupti

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Source is the injection library's C source, built by Build.
//
//go:embed inject/llmprof_cupti.c
var Source []byte

// Names of what Build writes.
const (
	SourceName  = "llmprof_cupti.c"
	LibraryName = "libllmprof_cupti.so"
	BuildLog    = "build.log"
)

// Toolkit is where a CUDA toolkit keeps what the library is built with.
type Toolkit struct {
	// Root is the toolkit folder the headers were found in.
	Root string
	// Include holds cupti.h and cuda.h (one or two folders).
	Include []string
	// Lib is libcupti's path.
	Lib string
}

// ErrNoToolkit is wrapped by FindToolkit's error when no CUDA toolkit with
// CUPTI is found.
var ErrNoToolkit = errors.New("no CUDA toolkit with CUPTI")

// roots are the folders FindToolkit looks in, in order: $CUDA_HOME,
// $CUDA_PATH, /usr/local/cuda.
func roots(getenv func(string) string) []string {
	var out []string
	for _, v := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if p := getenv(v); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if !slices.Contains(out, "/usr/local/cuda") {
		out = append(out, "/usr/local/cuda")
	}
	return out
}

// FindHeaders finds cupti.h and cuda.h under a toolkit root: CUPTI's
// headers are in extras/CUPTI/include in NVIDIA's installers and in include
// in distribution packages; cuda.h is in include.
func FindHeaders(root string) ([]string, error) {
	var inc []string
	cupti := ""
	for _, d := range []string{"extras/CUPTI/include", "include", "targets/x86_64-linux/include", "targets/sbsa-linux/include"} {
		if isFile(filepath.Join(root, d, "cupti.h")) {
			cupti = filepath.Join(root, d)
			break
		}
	}
	if cupti == "" {
		return nil, fmt.Errorf("%s: no cupti.h in extras/CUPTI/include or include", root)
	}
	inc = append(inc, cupti)
	if !isFile(filepath.Join(cupti, "cuda.h")) {
		cudaInc := filepath.Join(root, "include")
		if !isFile(filepath.Join(cudaInc, "cuda.h")) {
			return nil, fmt.Errorf("%s: cupti.h is in %s but there is no include/cuda.h", root, cupti)
		}
		inc = append(inc, cudaInc)
	}
	return inc, nil
}

// findLib finds libcupti under a toolkit root (the unversioned link, else
// the newest versioned file).
func findLib(root string) (string, error) {
	dirs := []string{"extras/CUPTI/lib64", "lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"}
	for _, d := range dirs {
		dir := filepath.Join(root, d)
		if p := filepath.Join(dir, "libcupti.so"); isFile(p) {
			return p, nil
		}
		if m, _ := filepath.Glob(filepath.Join(dir, "libcupti.so.*")); len(m) > 0 {
			slices.Sort(m)
			return m[len(m)-1], nil
		}
	}
	return "", fmt.Errorf("%s: no libcupti.so in %s", root, strings.Join(dirs, ", "))
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// FindToolkit looks for CUPTI's headers and library in $CUDA_HOME,
// $CUDA_PATH and /usr/local/cuda (getenv reads the environment). The error
// says where it looked and what each place lacked.
func FindToolkit(getenv func(string) string) (*Toolkit, error) {
	var why []string
	for _, root := range roots(getenv) {
		if _, err := os.Stat(root); err != nil {
			why = append(why, root+": absent")
			continue
		}
		inc, err := FindHeaders(root)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		lib, err := findLib(root)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		return &Toolkit{Root: root, Include: inc, Lib: lib}, nil
	}
	return nil, fmt.Errorf("%w: --cupti builds its injection library from CUPTI's headers (cupti.h, cuda.h) and libcupti, "+
		"and found none (%s); install the CUDA toolkit with its CUPTI component and set CUDA_HOME, or use --nsys or --torch-profiler",
		ErrNoToolkit, strings.Join(why, "; "))
}

// Compiler is the C compiler Build runs: $CC, else cc.
func Compiler(getenv func(string) string) (string, error) {
	name := getenv("CC")
	if name == "" {
		name = "cc"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("--cupti builds its injection library with a C compiler and found none (%s): %w", name, err)
	}
	return p, nil
}

// BuildArgs is the compiler command line that builds src into out against
// tk; extra flags (-D overrides of the record types) go before the source.
func BuildArgs(cc string, tk *Toolkit, src, out string, extra ...string) []string {
	args := []string{cc, "-std=gnu11", "-O2", "-fPIC", "-shared", "-pthread", "-Wall", "-Wextra"}
	for _, inc := range tk.Include {
		args = append(args, "-I"+inc)
	}
	args = append(args, extra...)
	args = append(args, "-o", out, src, tk.Lib, "-Wl,-rpath,"+filepath.Dir(tk.Lib))
	return args
}

// Build writes Source into dir and compiles it there into LibraryName,
// keeping the compiler's output in BuildLog; it returns the library's path.
func Build(cc string, tk *Toolkit, dir string, extra ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(dir, SourceName)
	if err := os.WriteFile(src, Source, 0o644); err != nil {
		return "", err
	}
	lib := filepath.Join(dir, LibraryName)
	args := BuildArgs(cc, tk, src, lib, extra...)
	cmd := exec.Command(args[0], args[1:]...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	err := cmd.Run()
	_ = os.WriteFile(filepath.Join(dir, BuildLog), append([]byte(strings.Join(args, " ")+"\n"), log.Bytes()...), 0o644)
	if err != nil {
		msg := strings.TrimSpace(log.String())
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		return "", fmt.Errorf("building the CUPTI injection library against %s failed (%v); the full log is %s:\n%s",
			tk.Root, err, filepath.Join(dir, BuildLog), msg)
	}
	return lib, nil
}
