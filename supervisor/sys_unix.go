//go:build unix

package supervisor

import (
	"errors"
	"syscall"
)

func supported() error { return nil }

// signalGroup signals the child's whole process group (its pgid is its
// pid). A group that is already gone is not an error.
func signalGroup(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
