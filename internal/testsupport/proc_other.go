//go:build !linux

package testsupport

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// KillWithParent is Linux's parent-death signal; elsewhere there is none, and
// a child outlives a test binary that dies without its clean-ups.
func KillWithParent(cmd *exec.Cmd) {}

// Alive reports whether pid is a process that has not exited (a zombie
// counts as alive here: there is no /proc to tell).
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

var errNoPrlimit = errors.New("prlimit is Linux only")

// SetOpenFilesLimit is Linux's prlimit; elsewhere it fails.
func SetOpenFilesLimit(pid int, limit uint64) (soft, hard uint64, err error) {
	return 0, 0, errNoPrlimit
}

// RestoreOpenFilesLimit is Linux's prlimit; elsewhere it fails.
func RestoreOpenFilesLimit(pid int, soft, hard uint64) error { return errNoPrlimit }

// Listens cannot tell without /proc: every process counts as listening.
func Listens(pid int, addr string) bool { return true }
