package transport

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// Accept backoff: a failed accept waits acceptBackoffMin, doubling up to
// acceptBackoffMax while it keeps failing (net/http's Server does the same),
// so a process out of file descriptors neither spins nor stops serving.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
	// warnEvery spaces the warnings a peer or a load can repeat at will.
	warnEvery = 10 * time.Second
)

// acceptLoop serves ln until it is closed. Past QUEEN_KAFKA_MAX_CONNECTIONS
// a new connection is closed at once: a client that reconnects, rather than
// a facade accepting work it cannot do. A transient accept failure (out of
// file descriptors above all) is waited out and retried: the connections
// already served are unaffected by it, and ending Serve for it would end
// the process without draining or handing its node id back.
func (s *Server) acceptLoop(ctx context.Context, ln net.Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			draining := s.draining
			s.mu.Unlock()
			if draining || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !retriableAccept(err) {
				return err
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			s.acceptWarn.Warn(s.cfg.Log, s.cfg.Now(), "accept failed, retrying with backoff; connections already served carry on", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		c := s.admit(nc)
		if c == nil {
			continue
		}
		go c.serve(ctx)
	}
}

// retriableAccept is an accept failure that passes: the process or the
// system out of file descriptors or buffers, a timeout, a connection reset
// before it was taken (what net.Error's Temporary covers, and what net/http
// retries), and the network errors Linux passes up from a pending
// connection, which accept(2) says to treat like EAGAIN.
func retriableAccept(err error) bool {
	var t interface{ Temporary() bool }
	if errors.As(err, &t) && t.Temporary() {
		return true
	}
	for _, e := range []syscall.Errno{syscall.ENOBUFS, syscall.ENOMEM, syscall.EPROTO, syscall.EPERM, syscall.ENETDOWN, syscall.ENOPROTOOPT, syscall.EHOSTDOWN, syscall.EHOSTUNREACH, syscall.EOPNOTSUPP, syscall.ENETUNREACH} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// admit registers nc, or closes it when the server is full or draining.
func (s *Server) admit(nc net.Conn) *Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		s.cfg.Observer.Refused("draining")
		_ = nc.Close()
		return nil
	}
	if len(s.conns) >= s.cfg.MaxConnections {
		s.cfg.Observer.Refused("max_connections")
		s.refuseWarn.Warn(s.cfg.Log, s.cfg.Now(), "connection refused: QUEEN_KAFKA_MAX_CONNECTIONS reached", "remote", nc.RemoteAddr().String(), "max_connections", s.cfg.MaxConnections)
		_ = nc.Close()
		return nil
	}
	s.cfg.Observer.Accepted()
	c := newConn(s, nc)
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	return c
}

// forget unregisters c once it has ended and every request of it is
// done, and tells the server's Forget hook.
func (s *Server) forget(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	if s.cfg.Forget != nil {
		s.cfg.Forget(c)
	}
	s.connWG.Done()
}
