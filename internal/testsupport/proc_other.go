//go:build !linux

package testsupport

import "os/exec"

// KillWithParent is Linux's parent-death signal; elsewhere there is none, and
// a child outlives a test binary that dies without its clean-ups.
func KillWithParent(cmd *exec.Cmd) {}
