package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/internal/version"
	"github.com/queen-mq/queen-kafka/registry"
	"github.com/queen-mq/queen-kafka/topology"
)

// cluster is cluster mode on one node (QUEEN_KAFKA_NODE_ID set): the
// registry session, the topology and the ownership read from it, and the
// one incarnation this process presents both in its registry row and in
// every group fence it writes. A single-mode node has none of it: n.cluster
// is nil and nothing below is ever reached. It is built from what it uses
// (the registry's config and the Queen KV route), and told at join what to
// do when the live set changes; it holds nothing of the node.
type cluster struct {
	cfg  registry.Config // the session's, incarnation included
	kv   registry.KV
	self registry.Node
	topo *topology.Cluster
	// owners answers ownership.Owners and holds the session once join
	// bound it; before that ownership is unknown and the topology is this
	// node alone.
	owners *registry.Ownership
	// lost receives the *registry.LostError when the session ends without
	// Close: another process took this node id.
	lost chan error
}

// newCluster prepares cluster mode for the registry identity cfg, reached
// through kv (the node's own credential). An empty cfg.Incarnation draws
// the process's token now, because the coordinator fences with it before
// the session exists.
func newCluster(cfg registry.Config, kv registry.KV) *cluster {
	if cfg.Incarnation == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
		cfg.Incarnation = hex.EncodeToString(b[:])
	}
	self := registry.Node{ID: cfg.NodeID, Host: cfg.Host, Port: cfg.Port}
	c := &cluster{cfg: cfg, kv: kv, self: self, owners: registry.NewOwnership(self), lost: make(chan error, 1)}
	c.topo = topology.NewCluster(self, cfg.Cluster, c.view, c.vouched)
	return c
}

// registryConfig is the registry identity and timing of a node configured
// by cfg.
func registryConfig(cfg config.Facade, log *slog.Logger) registry.Config {
	return registry.Config{
		Cluster:   cfg.Cluster,
		NodeID:    int32(cfg.NodeID),
		Host:      cfg.AdvertisedHost,
		Port:      int(cfg.AdvertisedPort),
		Version:   version.String(), // which build holds an id, for an operator reading the row
		Heartbeat: cfg.ClusterHeartbeat,
		TTL:       cfg.ClusterTTL,
		Logger:    log,
	}
}

// session is the registry session, nil until join succeeded.
func (c *cluster) session() *registry.Session { return c.owners.Session() }

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
	if err := n.cluster.join(ctx, func() {
		n.coord.DropUnowned()
		n.groups.DropUnowned()
		n.shares.DropUnowned()
		n.txns.DropUnowned(func(id string) bool { return n.txnOwnerCode(id) != kerr.NotCoordinator.Code })
		if k := n.sequencer.ForgetWindows(); k > 0 {
			n.log.Info("live set changed: sequence windows forgotten, partition leaders may have moved", "windows", k)
		}
	}); err != nil {
		return err
	}
	// Shutdown runs this after the connections drained: the fenced delete
	// of the own row, so peers drop this node on their next read.
	n.OnRelease(n.cluster.leave)
	return nil
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
	return n.cluster.cfg.Incarnation
}

// vouched is whether this node may present itself as a member: joined,
// and its registry session can answer with authority (registry.Session.Err
// is nil: the last heartbeat succeeded and is recent). A node that is not
// yet joined vouches for nothing but has no peers to defer to either.
func (c *cluster) vouched() bool {
	s := c.session()
	return s == nil || s.Err() == nil
}

// join starts the session and follows it, running changed at every change
// of the live set.
func (c *cluster) join(ctx context.Context, changed func()) error {
	if c.session() != nil {
		return errors.New("cluster: already joined")
	}
	s, err := registry.Start(ctx, c.kv, c.cfg)
	if err != nil {
		return fmt.Errorf("joining cluster %q as node %d: %w", c.cfg.Cluster, c.cfg.NodeID, err)
	}
	c.owners.Bind(s)
	go c.follow(s, changed)
	return nil
}

// handOff is a cluster node's controlled shutdown, its first step while
// it still serves: the own row is deleted (from then on the node vouches
// for nothing: FindCoordinator names a peer, group RPCs are answered
// COORDINATOR_NOT_AVAILABLE, Metadata names peers as the leaders) and the
// node keeps listening until every peer has read the live set without it
// (registry.Session.Leave), within ctx. So a client that reaches this node
// during its stop is sent to a peer, and one that asks a peer is never
// named this node once it stops listening, as a Kafka broker's controlled
// shutdown moves its leaderships and coordinators before it closes its
// listener. In single mode, and before the join, it does nothing.
func (n *Node) handOff(ctx context.Context) error {
	if n.cluster == nil {
		return nil
	}
	s := n.cluster.session()
	if s == nil {
		return nil
	}
	return s.Leave(ctx)
}

// leave closes the session, within ctx (Shutdown keeps a release budget
// of its own for it, even after a drain that used up its share) and
// registry.CloseBudget.
func (c *cluster) leave(ctx context.Context) error {
	s := c.session()
	if s == nil {
		return nil
	}
	return s.Close(ctx)
}

// follow reacts to every change the session reports: changed drops each
// group whose owner moved away (its members hear NOT_COORDINATOR and re-run
// FindCoordinator), and one that moved here starts empty when its members
// arrive. It ends with the session; an end that Close did not cause is the
// id lost to another process.
func (c *cluster) follow(s *registry.Session, changed func()) {
	for {
		next := s.Changed()
		changed()
		select {
		case <-next:
		case <-s.Done():
			var lost *registry.LostError
			if err := s.Err(); errors.As(err, &lost) {
				c.lost <- lost
			}
			return
		}
	}
}
