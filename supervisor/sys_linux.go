package supervisor

import "syscall"

// sysProcAttr puts the child in a process group of its own (a stop signals
// the group, so a grandchild dies with it) and has the kernel SIGKILL it
// when the thread that started it dies, which is how the child dies with a
// broker that was itself SIGKILLed. spawn keeps that thread alive and
// locked for the child's whole life, because PR_SET_PDEATHSIG follows the
// thread rather than the process (golang/go#27505).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
