package node

import (
	"context"
	"log/slog"
	"math"
	"net"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/transport"
)

// newCoordinator builds the group coordinator of a node configured by cfg,
// whose groups own decides (ownership.Single in single mode,
// registry.Ownership in a cluster). Cluster mode fences every offset write
// with this node's id and the process's incarnation, so that a node that
// lost a group without noticing can never overwrite its successor's
// commits.
func newCoordinator(cfg config.Facade, kv coordinator.KV, log *slog.Logger, own ownership.Owners, incarnation string, consumer coordinator.ConsumerGroups, share coordinator.GroupKind, unstable coordinator.Unstable) *coordinator.Coordinator {
	return coordinator.New(coordinator.Config{
		Consumer:          consumer,
		Share:             share,
		Unstable:          unstable,
		KV:                kv,
		Ownership:         own,
		Log:               log.With("component", "coordinator"),
		JoinDelay:         cfg.GroupJoinDelay,
		MinSessionTimeout: cfg.GroupMinSessionTimeout,
		MaxSessionTimeout: cfg.GroupMaxSessionTimeout,
		// One identity's share of the group ceiling.
		MaxGroupsPerIdentity: identityShare(cfg),
		Fenced:               cfg.Clustered(),
		NodeID:               int32(cfg.NodeID),
		Incarnation:          incarnation, // the registry row's: one per process
	})
}

// unstableOffsets is the transaction coordinator's open offsets as the
// group coordinator asks for them (OffsetFetch's require_stable): txn.Shared's
// qk:txnpend: index in cluster mode, where the group's coordinator staged
// them, and txn.Manager's memory in single mode. The two are built after the
// coordinator (they check TxnOffsetCommit's membership through it), so this
// is read at the call.
type unstableOffsets struct{ n *Node }

func (u unstableOffsets) PendingOffsets(ctx context.Context, identity string, kv coordinator.KV, group string) (map[coordinator.TopicPartition]bool, error) {
	if u.n.txnShared != nil {
		return u.n.txnShared.PendingOffsets(ctx, identity, kv, group)
	}
	return u.n.txns.PendingOffsets(ctx, identity, kv, group)
}

// identityShare is what one identity may hold of a node-wide bound shared
// per identity (the group ceiling, the parked fetch calls): the bound's own
// share (0) when SASL gives each credential an identity, and all of it
// without SASL, where every client reaches Queen as the facade's one
// credential and is filed under the one identity "": a share would cap a
// whole deployment at a quarter of the bound.
func identityShare(cfg config.Facade) int {
	if cfg.SASL != "" {
		return 0
	}
	return math.MaxInt
}

// selfBroker is this node as FindCoordinator names it in single mode.
func selfBroker(cfg config.Facade) ownership.Broker {
	return ownership.Broker{NodeID: int32(cfg.NodeID), Host: cfg.AdvertisedHost, Port: cfg.AdvertisedPort}
}

// groupClient is the connection as the coordinator needs it: the member's
// client id and host as DescribeGroups reports them, the identity that
// keys the group registry, the credential its KV calls carry, and the
// connection's catalogue, which says which partitions a commit may write.
func (n *Node) groupClient(c *transport.Conn) coordinator.Client {
	host := c.RemoteAddr()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return coordinator.Client{ID: c.ClientID(), Host: "/" + host, Identity: c.Identity(), KV: c.Queen(), Topics: n.cats.Topics(callerOf(c)), IDs: n.cats.Topics(callerOf(c))}
}
