package testsupport

import (
	"net"
	"testing"
)

// FreeAddr asks the kernel for an unused loopback address ("127.0.0.1:port").
// The listener is closed before the address is handed on, which leaves a
// small window for a collision: a child started on it must be checked to be
// the one answering (Proc's readiness checks fail when the child exited).
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// FreePort is FreeAddr's port, failing t when there is none.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
