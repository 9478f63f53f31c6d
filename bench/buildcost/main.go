// Command buildcost measures what a cold build of a package costs, package by
// package: it builds with an empty build cache and itself as the -toolexec
// wrapper, which records the user+sys CPU of every compile, asm and link, and
// then adds the figures up by module and, for each -only prefix, over the
// packages that only that prefix's packages bring in (what removing it would
// save). bench/buildcost.sh runs it on ./cmd/llmprof.
//
//	buildcost [-only p1,p2] [-log FILE] PKG   build PKG cold (or read FILE) and report
package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// logEnv names the file the wrapper appends its records to.
const logEnv = "BUILDCOST_LOG"

func main() {
	if log := os.Getenv(logEnv); log != "" && len(os.Args) > 1 && filepath.IsAbs(os.Args[1]) {
		os.Exit(wrap(log, os.Args[1:]))
	}
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "buildcost:", err)
		os.Exit(1)
	}
}

// wrap runs one tool of the build and appends "user sys tool package".
func wrap(log string, args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if cmd.ProcessState != nil {
		tool := filepath.Base(args[0])
		pkg := "(" + tool + ")"
		for i := 1; i+1 < len(args); i++ {
			if args[i] == "-p" {
				pkg = args[i+1]
			}
		}
		if tool == "link" {
			pkg = "(link)"
		}
		line := fmt.Sprintf("%.3f %.3f %s %s\n", cmd.ProcessState.UserTime().Seconds(), cmd.ProcessState.SystemTime().Seconds(), tool, pkg)
		if f, ferr := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); ferr == nil {
			f.WriteString(line) // one short O_APPEND write: lines of parallel tools do not interleave
			f.Close()
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildcost:", err)
		return 1
	}
	return 0
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("buildcost", flag.ContinueOnError)
	only := fs.String("only", "", "comma-separated import-path prefixes: report the CPU of the packages only they bring in")
	logFile := fs.String("log", "", "read this log of an earlier run instead of building")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: buildcost [-only p1,p2] [-log FILE] PKG")
	}
	pkg := fs.Arg(0)
	if *logFile == "" {
		tmp, err := os.MkdirTemp("", "buildcost")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		self, err := os.Executable()
		if err != nil {
			return err
		}
		*logFile = filepath.Join(tmp, "tools.log")
		cmd := exec.Command("go", "build", "-toolexec="+self, "-o", os.DevNull, pkg)
		cmd.Env = append(os.Environ(), "GOCACHE="+filepath.Join(tmp, "cache"), logEnv+"="+*logFile)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
		ps := cmd.ProcessState
		fmt.Fprintf(out, "cold go build %s: %.1f s wall, %.1f s user + %.1f s sys = %.1f s CPU\n", pkg, time.Since(start).Seconds(),
			ps.UserTime().Seconds(), ps.SystemTime().Seconds(), (ps.UserTime() + ps.SystemTime()).Seconds())
	}
	cpu, err := readLog(*logFile)
	if err != nil {
		return err
	}
	g, err := importGraph(pkg)
	if err != nil {
		return err
	}
	return report(out, cpu, g, splitList(*only))
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// readLog sums the log's CPU seconds by package.
func readLog(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cpu := map[string]float64{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 {
			return nil, fmt.Errorf("%s:%d: want 4 fields, have %d", path, n, len(fields))
		}
		u, uerr := strconv.ParseFloat(fields[0], 64)
		s, serr := strconv.ParseFloat(fields[1], 64)
		if uerr != nil || serr != nil {
			return nil, fmt.Errorf("%s:%d: bad CPU times %q %q", path, n, fields[0], fields[1])
		}
		cpu[fields[3]] += u + s
	}
	return cpu, sc.Err()
}

// graph is the import graph of a build: each package's module ("" for the
// standard library) and imports.
type graph struct {
	root    string // the import path of the package built
	module  map[string]string
	imports map[string][]string
}

func importGraph(pkg string) (*graph, error) {
	b, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{if .Module}}{{.Module.Path}}{{else}}-{{end}} {{join .Imports \" \"}}", pkg).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	g := &graph{module: map[string]string{}, imports: map[string][]string{}}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		mod := f[1]
		if mod == "-" {
			mod = ""
		}
		g.module[f[0]], g.imports[f[0]] = mod, f[2:]
		g.root = f[0] // go list -deps lists a package after its dependencies: the package built comes last
	}
	return g, nil
}

// reach lists the packages root imports, directly or not, without passing
// through a package under cut ("" cuts nothing).
func (g *graph) reach(root, cut string) map[string]bool {
	seen := map[string]bool{}
	stack := []string{root}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[p] || under(p, cut) {
			continue
		}
		seen[p] = true
		stack = append(stack, g.imports[p]...)
	}
	return seen
}

// under reports whether package p is prefix or lies below it.
func under(p, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return prefix != "" && (p == prefix || strings.HasPrefix(p, prefix+"/"))
}

type entry struct {
	name string
	cpu  float64
}

func sorted(m map[string]float64) []entry {
	var out []entry
	for k, v := range m {
		out = append(out, entry{k, v})
	}
	slices.SortFunc(out, func(a, b entry) int { return cmp.Or(cmp.Compare(b.cpu, a.cpu), strings.Compare(a.name, b.name)) })
	return out
}

func report(out io.Writer, cpu map[string]float64, g *graph, only []string) error {
	total := 0.0
	for _, v := range cpu {
		total += v
	}
	fmt.Fprintf(out, "tools (compile, asm, link): %.1f s CPU\n\nby module:\n", total)
	byMod := map[string]float64{}
	for p, v := range cpu {
		mod, ok := g.module[p]
		switch {
		case strings.HasPrefix(p, "("):
			mod = p
		case !ok:
			mod = "(not in the build graph)"
		case mod == "":
			mod = "std"
		}
		byMod[mod] += v
	}
	for _, e := range sorted(byMod) {
		if e.cpu >= total/200 { // modules of 0.5% and more
			fmt.Fprintf(out, "  %-50s %6.1f s  %5.1f%%\n", e.name, e.cpu, 100*e.cpu/total)
		}
	}
	fmt.Fprintf(out, "\nlargest packages:\n")
	for i, e := range sorted(cpu) {
		if i == 15 {
			break
		}
		fmt.Fprintf(out, "  %-60s %6.1f s\n", e.name, e.cpu)
	}
	all := g.reach(g.root, "")
	for _, cut := range only {
		kept := g.reach(g.root, cut)
		sum, n := 0.0, 0
		for p := range all {
			if !kept[p] {
				sum += cpu[p]
				n++
			}
		}
		fmt.Fprintf(out, "\nonly through %s: %d packages, %.1f s CPU (%.1f%% of the tools' CPU)\n", cut, n, sum, 100*sum/total)
	}
	return nil
}
