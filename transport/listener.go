package node

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
func (n *Node) acceptLoop(ctx context.Context, ln net.Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			n.mu.Lock()
			draining := n.draining
			n.mu.Unlock()
			if draining || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !retriableAccept(err) {
				return err
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			n.acceptWarn.Warn(n.log, n.now(), "accept failed, retrying with backoff; connections already served carry on", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		c := n.admit(nc)
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

// admit registers nc, or closes it when the node is full or draining.
func (n *Node) admit(nc net.Conn) *Conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.draining {
		n.obs.Refused("draining")
		_ = nc.Close()
		return nil
	}
	if len(n.conns) >= n.cfg.MaxConnections {
		n.obs.Refused("max_connections")
		n.refuseWarn.Warn(n.log, n.now(), "connection refused: QUEEN_KAFKA_MAX_CONNECTIONS reached", "remote", nc.RemoteAddr().String(), "max_connections", n.cfg.MaxConnections)
		_ = nc.Close()
		return nil
	}
	n.obs.Accepted()
	c := newConn(n, nc)
	n.conns[c] = struct{}{}
	n.connWG.Add(1)
	return c
}

func (n *Node) forget(c *Conn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
	n.txns.Disconnected(c.id)
	n.connWG.Done()
}
