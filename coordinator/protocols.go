package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroups is what the classic coordinator asks of the node's KIP-848
// consumer-protocol groups (package consumergroup implements it), so that
// one group id is only ever one protocol's and a consumer-protocol group's
// offsets are checked against member epochs while staying in this
// package's rows. Every method answers about groups this node coordinates;
// code is what to answer when the answer cannot be known (a Queen failure).
type ConsumerGroups interface {
	GroupKind
	// ValidateCommit checks an OffsetCommit (txn false) or TxnOffsetCommit
	// against the member's epoch; held false leaves the classic rules.
	ValidateCommit(ctx context.Context, identity string, kv KV, group, memberID string, epoch int32, txn bool, version int16) (held bool, code int16)
	// Subscribed is the topics a consumer-protocol group's members
	// subscribe to (by name or by a resolved regular expression), which
	// OffsetDelete refuses GROUP_SUBSCRIBED_TO_TOPIC.
	Subscribed(ctx context.Context, identity string, kv KV, group string) (held bool, topics map[string]bool, code int16)
	// ValidateFetch checks an OffsetFetch v9+ naming a member.
	ValidateFetch(ctx context.Context, identity string, kv KV, group string, memberID *string, epoch int32) (held bool, code int16)
}

// GroupKind is a group type other than classic that holds group ids here
// (KIP-848 consumer groups, KIP-932 share groups): one group id is only
// ever one type's. Every method answers about groups this node
// coordinates; code is what to answer when the answer cannot be known.
type GroupKind interface {
	// Holds reports whether id is a group of this type, and whether it
	// has members.
	Holds(ctx context.Context, identity string, kv KV, id string) (held, hasMembers bool, code int16)
	// DeleteEmpty deletes an empty group's state (DeleteGroups; for a
	// consumer group also a JoinGroup converting it); NON_EMPTY_GROUP
	// when it has members.
	DeleteEmpty(ctx context.Context, identity string, kv KV, id string) (deleted bool, code int16)
	// List is the groups of this type as ListGroups rows, filtered.
	List(ctx context.Context, identity string, kv KV, statesFilter, typesFilter []string) ([]kmsg.ListGroupsResponseGroup, int16)
}

// shareHeld asks the share side (Config.Share) whether group is a share
// group; code is the refusal when that cannot be known. Kafka 4.2 refuses
// a share group's id to the classic and offset APIs: JoinGroup
// INCONSISTENT_GROUP_PROTOCOL, OffsetCommit, OffsetFetch, OffsetDelete and
// TxnOffsetCommit GROUP_ID_NOT_FOUND ("Group … is not a consumer group.").
func (c *Coordinator) shareHeld(ctx context.Context, cl Client, group string) (held, hasMembers bool, code int16) {
	if c.cfg.Share == nil {
		return false, false, 0
	}
	return c.cfg.Share.Holds(ctx, cl.Identity, c.kvFor(cl), group)
}

// notConsumer is the code an offsets API answers for group: 0 unless it is
// a share group (GROUP_ID_NOT_FOUND) or that cannot be known.
func (c *Coordinator) notConsumer(ctx context.Context, cl Client, group string) int16 {
	held, _, code := c.shareHeld(ctx, cl, group)
	if held {
		return kerr.GroupIDNotFound.Code
	}
	return code
}

// ReleaseEmptyClassic reports whether group may become a consumer-protocol
// group (a ConsumerGroupHeartbeat joining it): true when no classic group
// with members or a rebalance in progress holds the id here; an Empty one
// is forgotten (Kafka's online upgrade of an empty classic group; its
// committed offsets stay). A classic group with members is not converted:
// Kafka's group.consumer.migration.policy "disabled" for non-empty groups.
func (c *Coordinator) ReleaseEmptyClassic(cl Client, group string) bool {
	g := c.lookup(cl, group)
	if g == nil {
		return true
	}
	if !g.wmu.TryLock() {
		return false // a commit is being written: not idle
	}
	defer g.wmu.Unlock()
	g.mu.Lock()
	idle := g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0 || g.state == stateDead
	if idle && g.state != stateDead {
		g.kill(kerr.CoordinatorNotAvailable.Code)
	}
	g.mu.Unlock()
	if idle {
		c.forget(g)
	}
	return idle
}

// consumerHeld asks the consumer side whether group is one of its groups;
// code is the refusal when that cannot be known.
func (c *Coordinator) consumerHeld(ctx context.Context, cl Client, group string) (held, hasMembers bool, code int16) {
	if c.cfg.Consumer == nil {
		return false, false, 0
	}
	return c.cfg.Consumer.Holds(ctx, cl.Identity, cl.KV, group)
}

// IsClassic reports whether group is a classic group this node knows (in
// memory, or listed by the store's index), for ConsumerGroupDescribe's
// answer "Group … is not a consumer group."
func (c *Coordinator) IsClassic(ctx context.Context, cl Client, group string) bool {
	d, consumer := c.describe(ctx, cl, group)
	return !consumer && d.ErrorCode == 0 && d.State != stateDead.String()
}
