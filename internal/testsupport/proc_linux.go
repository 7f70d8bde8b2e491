package testsupport

import (
	"os/exec"
	"syscall"
)

// KillWithParent makes cmd's child die with the test binary (a timeout
// panic, a SIGKILL) instead of holding ports on a shared machine.
func KillWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
