package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/registry"
)

// cluster is cluster mode on one node (QUEEN_KAFKA_NODE_ID set): the
// registry session, the topology and group ownership read from it, and the
// one incarnation this process presents both in its registry row and in
// every group fence it writes. A single-mode node has none of it: n.cluster
// is nil and nothing below is ever reached.
type cluster struct {
	n           *Node
	incarnation string
	self        registry.Node
	topo        *clusterTopology

	// sess is set once by join; before that (between New and a successful
	// join) ownership is unknown and the topology is this node alone.
	sess atomic.Pointer[registry.Session]
	// lost receives the *registry.LostError when the session ends without
	// Close: another process took this node id.
	lost chan error
}

func newCluster(n *Node) *cluster {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	c := &cluster{
		n:           n,
		incarnation: hex.EncodeToString(b[:]),
		self: registry.Node{
			ID: int32(n.cfg.NodeID), Host: n.cfg.AdvertisedHost, Port: int(n.cfg.AdvertisedPort),
		},
		lost: make(chan error, 1),
	}
	c.topo = newClusterTopology(c)
	return c
}

// session is the registry session, nil until join succeeded.
func (c *cluster) session() *registry.Session { return c.sess.Load() }

// view is the last live set read, or an empty one before join.
func (c *cluster) view() registry.View {
	if s := c.session(); s != nil {
		return s.View()
	}
	return registry.View{Self: c.self.ID}
}

// JoinCluster claims this node's id in the registry and starts its
// heartbeat; it is the step between Listen and Serve. It may block for one
// TTL plus one heartbeat while a predecessor's row is waited out, and for
// as long as the registry is unreachable (until ctx ends). A
// *registry.ConflictError (another live process holds the id) is a fatal
// boot. In single mode it does nothing.
func (n *Node) JoinCluster(ctx context.Context) error {
	if n.cluster == nil {
		return nil
	}
	return n.cluster.join(ctx)
}

// Lost delivers the reason once when this node's id was taken by another
// process while serving; the process must stop, because another facade now
// answers as this node. Nil (never ready) in single mode.
func (n *Node) Lost() <-chan error {
	if n.cluster == nil {
		return nil
	}
	return n.cluster.lost
}

// Incarnation is the token this process writes in its registry row and in
// every group fence; empty in single mode.
func (n *Node) Incarnation() string {
	if n.cluster == nil {
		return ""
	}
	return n.cluster.incarnation
}

func (c *cluster) join(ctx context.Context) error {
	if c.session() != nil {
		return errors.New("cluster: already joined")
	}
	cfg := c.n.cfg
	s, err := registry.Start(ctx, c.n.queen, registry.Config{
		Cluster:     cfg.Cluster,
		NodeID:      int32(cfg.NodeID),
		Host:        cfg.AdvertisedHost,
		Port:        int(cfg.AdvertisedPort),
		Version:     facadeVersion(),
		Heartbeat:   cfg.ClusterHeartbeat,
		TTL:         cfg.ClusterTTL,
		Incarnation: c.incarnation,
		Logger:      c.n.log,
	})
	if err != nil {
		return fmt.Errorf("joining cluster %q as node %d: %w", cfg.Cluster, cfg.NodeID, err)
	}
	c.sess.Store(s)
	// Shutdown runs this after the connections drained: the fenced delete
	// of the own row, so peers drop this node on their next read. It gets
	// its own budget (registry.CloseBudget) even when a slow drain used up
	// the shutdown's, because a late delete is still earlier than the TTL.
	c.n.OnRelease(func(ctx context.Context) error { return s.Close(context.WithoutCancel(ctx)) })
	go c.follow(s)
	return nil
}

// follow reacts to every change the session reports: a group whose owner
// moved away is dropped (its members hear NOT_COORDINATOR and re-run
// FindCoordinator), and one that moved here starts empty when its members
// arrive. It ends with the session; an end that Close did not cause is the
// id lost to another process.
func (c *cluster) follow(s *registry.Session) {
	for {
		changed := s.Changed()
		c.n.coord.DropUnowned()
		select {
		case <-changed:
		case <-s.Done():
			var lost *registry.LostError
			if err := s.Err(); errors.As(err, &lost) {
				c.lost <- lost
			}
			return
		}
	}
}

// ownership is the coordinator's view of who owns a group: the session's
// answer, or unknown (COORDINATOR_NOT_AVAILABLE) while the registry cannot
// be trusted or before the node joined.
type clusterOwnership struct{ c *cluster }

func (o clusterOwnership) Owner(group string) (coordinator.Broker, error) {
	s := o.c.session()
	if s == nil {
		return coordinator.Broker{}, coordinator.ErrNoOwner
	}
	n, err := s.Owner(group)
	if err != nil {
		return coordinator.Broker{}, fmt.Errorf("%w: %w", coordinator.ErrNoOwner, err)
	}
	return broker(n), nil
}

func (o clusterOwnership) Self() coordinator.Broker { return broker(o.c.self) }

func broker(n registry.Node) coordinator.Broker {
	return coordinator.Broker{NodeID: n.ID, Host: n.Host, Port: int32(n.Port)}
}

// facadeVersion is written into the registry row so an operator reading it
// can tell which build holds an id.
func facadeVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}
