package transport

import (
	"net"
	"os"
	"syscall"
	"testing"
)

// Out of file descriptors (the process's or the system's) is waited out;
// a closed listener is the end of serving, not an error to retry.
func TestRetriableAccept(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}, true},
		{&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENFILE)}, true},
		{&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.ENOBUFS)}, true},
		{&net.OpError{Op: "accept", Net: "tcp", Err: net.ErrClosed}, false},
		{&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EBADF)}, false},
	} {
		if got := retriableAccept(tc.err); got != tc.want {
			t.Errorf("retriableAccept(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
