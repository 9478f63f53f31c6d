//go:build unix

package ingest

import (
	"errors"
	"os/exec"
	"syscall"
)

// configureChild puts nsys in a process group of its own and makes cancel
// kill that group: `nsys export` starts helpers that would otherwise outlive
// it and keep its output pipe open. On Linux the child also dies with
// llmprof (Pdeathsig), so a SIGKILL of llmprof does not leave nsys running.
func configureChild(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// The group's id is the leader's pid.
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return cmd.Process.Kill()
		}
		return nil
	}
}

// processAlive reports whether a process with this pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
