package node

import (
	"context"
	"errors"
	"net"
	"time"
)

// acceptLoop serves ln until it is closed. Past QUEEN_KAFKA_MAX_CONNECTIONS
// a new connection is closed at once: a client that reconnects, rather than
// a facade accepting work it cannot do.
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
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Transient accept failure (e.g. out of file descriptors):
				// back off rather than spin.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				n.log.Warn("accept failed, backing off", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		c := n.admit(nc)
		if c == nil {
			continue
		}
		go c.serve(ctx)
	}
}

// admit registers nc, or closes it when the node is full or draining.
func (n *Node) admit(nc net.Conn) *Conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.draining {
		_ = nc.Close()
		return nil
	}
	if len(n.conns) >= n.cfg.MaxConnections {
		n.log.Warn("connection refused: QUEEN_KAFKA_MAX_CONNECTIONS reached", "remote", nc.RemoteAddr().String(), "max_connections", n.cfg.MaxConnections)
		_ = nc.Close()
		return nil
	}
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
