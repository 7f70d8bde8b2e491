package node

import (
	"context"
	"log/slog"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/consumergroup"
	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/sharegroup"
	"github.com/queen-mq/queen-kafka/sharepartition"
	"github.com/queen-mq/queen-kafka/transport"
)

// newConsumerGroups builds the node's KIP-848 consumer-protocol groups,
// owned by the same rendezvous hash as the classic ones; cluster mode
// moves a group's fence when this node takes it over, as the coordinator
// does for a classic group's first join.
func newConsumerGroups(cfg config.Facade, kv consumergroup.KV, log *slog.Logger, own ownership.Owners, incarnation string) *consumergroup.Manager {
	return consumergroup.New(consumergroup.Config{
		KV:                kv,
		Ownership:         own,
		Log:               log.With("component", "consumergroup"),
		HeartbeatInterval: cfg.ConsumerGroupHeartbeatInterval,
		SessionTimeout:    cfg.ConsumerGroupSessionTimeout,
		// One identity's share of the group ceiling, as the classic
		// coordinator's.
		MaxGroupsPerIdentity: identityShare(cfg),
		Fenced:               cfg.Clustered(),
		NodeID:               int32(cfg.NodeID),
		Incarnation:          incarnation,
	})
}

// newShareGroups builds the node's KIP-932 share groups, owned by the same
// rendezvous hash as the other groups; an id a classic or consumer group
// holds is not a share group's.
func (n *Node) newShareGroups(cfg config.Facade, log *slog.Logger, own ownership.Owners) *sharegroup.Manager {
	return sharegroup.New(sharegroup.Config{HeartbeatInterval: cfg.ShareGroupHeartbeatInterval, SessionTimeout: cfg.ShareGroupSessionTimeout,
		MaxSize: cfg.ShareGroupMaxSize, Ownership: own, Fenced: cfg.Clustered(), NodeID: int32(cfg.NodeID), Incarnation: n.Incarnation(),
		Log: log.With("component", "sharegroup"),
		Others: func(ctx context.Context, identity string, kv sharegroup.KV, id string) (bool, int16) {
			held, _, code := n.groups.Holds(ctx, identity, kv, id)
			return held || n.coord.IsClassic(ctx, coordinator.Client{Identity: identity, KV: kv}, id), code
		},
		OnMemberGone: n.releaseShareMember,
		GroupConfig: func(ctx context.Context, kv sharegroup.KV, group string) (sharegroup.GroupSettings, error) {
			v, err := n.groupCfg.Get(ctx, kv, group)
			return sharegroup.GroupSettings{HeartbeatInterval: v.ShareHeartbeatInterval, SessionTimeout: v.ShareSessionTimeout}, err
		}})
}

// consumerGroupClient is the connection as package consumergroup needs it.
func (n *Node) consumerGroupClient(c *transport.Conn) consumergroup.Client {
	gc := n.groupClient(c)
	return consumergroup.Client{ID: gc.ID, Host: gc.Host, Identity: gc.Identity, KV: gc.KV, Topics: n.cats.Topics(callerOf(c))}
}

// releaseShareMember gives back what a share group's member held in every
// share-partition of the group (it left or was fenced: Kafka releases its
// records at once rather than at their locks' expiry).
func (n *Node) releaseShareMember(ctx context.Context, kv sharegroup.KV, group, member string) {
	q, ok := kv.(*queen.Client)
	if !ok {
		return
	}
	sums, err := sharepartition.Describe(ctx, kv, group)
	if err != nil {
		n.log.Warn("share member gone: its share-partitions unreadable; its records wait for their locks", "group", group, "member", member, "err", err)
		return
	}
	keys := make([]sharepartition.Key, 0, len(sums))
	for _, s := range sums {
		keys = append(keys, sharepartition.Key{Group: group, Topic: s.Topic, Partition: s.Partition})
	}
	if err := n.shares.ReleaseMember(ctx, kv, q, member, keys); err != nil {
		n.log.Warn("share member gone: a release failed; those records wait for their locks", "group", group, "member", member, "err", err)
	}
}
