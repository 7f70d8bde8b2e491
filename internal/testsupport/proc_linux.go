package testsupport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// KillWithParent makes cmd's child die with the test binary (a timeout
// panic, a SIGKILL) instead of holding ports on a shared machine.
func KillWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// Alive reports whether pid is a process that has not exited. A zombie
// counts as exited: in a container, whoever inherits an orphan may never
// reap it.
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) STATE …: comm may hold spaces, so read after the last ')'.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// SetOpenFilesLimit sets process pid's soft RLIMIT_NOFILE to limit (the
// hard one stays, so no privilege is needed) and returns the limits it had, so a test can starve a running child
// of file descriptors and give them back. Go raises a process's soft limit
// to its hard one at start, so the limit must be set on the running child,
// not inherited.
func SetOpenFilesLimit(pid int, limit uint64) (soft, hard uint64, err error) {
	var old [2]uint64 // struct rlimit: cur, max
	if err := prlimit(pid, nil, &old); err != nil {
		return 0, 0, err
	}
	if err := prlimit(pid, &[2]uint64{limit, old[1]}, nil); err != nil {
		return 0, 0, err
	}
	return old[0], old[1], nil
}

// RestoreOpenFilesLimit puts back the limits SetOpenFilesLimit returned.
func RestoreOpenFilesLimit(pid int, soft, hard uint64) error {
	return prlimit(pid, &[2]uint64{soft, hard}, nil)
}

func prlimit(pid int, set, old *[2]uint64) error {
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_NOFILE), uintptr(unsafe.Pointer(set)), uintptr(unsafe.Pointer(old)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("prlimit(%d, RLIMIT_NOFILE): %w", pid, errno)
	}
	return nil
}

// Listens reports whether process pid holds the listening TCP socket of
// addr (an IPv4 "host:port"): a port found free can be taken by another
// test's process before pid binds it, and that process's answers are not
// pid's. Unknown (no /proc entry to read) counts as listening.
func Listens(pid int, addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host).To4()
	pn, perr := strconv.Atoi(port)
	if err != nil || ip == nil || perr != nil {
		return true
	}
	// /proc/net/tcp: "sl local_address rem_address st … inode", the
	// address as little-endian hex of the IPv4 address, ':', hex port.
	local := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], pn)
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return true
	}
	inode := ""
	for _, line := range strings.Split(string(table), "\n") {
		f := strings.Fields(line)
		if len(f) >= 10 && f[1] == local && f[3] == "0A" { // 0A: LISTEN
			inode = f[9]
		}
	}
	if inode == "" {
		return false
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	want := "socket:[" + inode + "]"
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == want {
			return true
		}
	}
	return false
}
