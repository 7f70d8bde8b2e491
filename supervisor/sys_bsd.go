//go:build unix && !linux

package supervisor

import "syscall"

// sysProcAttr: a process group of its own. There is no PR_SET_PDEATHSIG
// here, so a SIGKILLed broker leaves the facade running, re-parented to
// init (the seed's stated macOS and BSD caveat).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
