package e2e

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// frameHooks are what a frameProxy shows one connection's frames to, each
// frame whole, size prefix included.
type frameHooks struct {
	// request sees each request before it is forwarded; false cuts the
	// connection instead.
	request func(f []byte) bool
	// answer sees each answer before it is forwarded; false cuts the
	// connection instead. Nil forwards every answer.
	answer func(f []byte) bool
	// linger keeps the connection to the target open this long after the
	// client's side ended, so that a request a hook held past the client's
	// timeout and then forwarded is still read and answered by the target.
	linger time.Duration
}

// facadeBehindProxy starts a facade on dev that advertises a Kafka-frame
// proxy in front of it, so every connection a client makes goes through
// the proxy, and returns the facade and the proxy's address. hooks is
// called once per connection the proxy accepts. The proxy needs the
// facade's address and the facade the proxy's: it reserves the facade's
// port, binds the proxy, then starts the facade.
func facadeBehindProxy(t *testing.T, dev *queenDev, hooks func() frameHooks) (*facade, string) {
	t.Helper()
	facPort := freePort(t)
	addr := startFrameProxy(t, "127.0.0.1:"+strconv.Itoa(facPort), hooks)
	f := launchFacade(t, newFacade(dev.url, facPort, map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": addr}))
	return f, addr
}

// startFrameProxy listens on a free loopback port until t ends, pairs
// every connection it accepts with one of its own to target, and returns
// its address.
func startFrameProxy(t testing.TB, target string, hooks func() frameHooks) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go proxyFrames(c, target, hooks())
		}
	}()
	return ln.Addr().String()
}

// proxyFrames passes whole frames between client and a new connection to
// target, each through its hook, until either side closes or a hook cuts
// them.
func proxyFrames(client net.Conn, target string, h frameHooks) {
	server, err := net.Dial("tcp", target)
	if err != nil {
		client.Close()
		return
	}
	closeBoth := func() { client.Close(); server.Close() }
	go func() { // client → server
		defer func() {
			client.Close()
			time.Sleep(h.linger)
			server.Close()
		}()
		for {
			f, err := readFrame(client)
			if err != nil || !h.request(f) {
				return
			}
			if _, err := server.Write(f); err != nil {
				return
			}
		}
	}()
	defer closeBoth()
	for { // server → client
		f, err := readFrame(server)
		if err != nil || (h.answer != nil && !h.answer(f)) {
			return
		}
		if _, err := client.Write(f); err != nil {
			return
		}
	}
}

// readFrame reads one size-prefixed frame, prefix included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 128<<20 {
		return nil, io.ErrUnexpectedEOF
	}
	f := make([]byte, 4+n)
	copy(f, size[:])
	_, err := io.ReadFull(r, f[4:])
	return f, err
}
