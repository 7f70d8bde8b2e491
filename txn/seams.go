package txn

import (
	"context"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/queen"
)

// Queen is the two routes the package calls (§7, §8). *queen.Client
// satisfies it.
type Queen interface {
	KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error)
	Transaction(ctx context.Context, req queen.TxnRequest) ([]queen.KVResult, error)
}

// IDs allocates a fresh producer id for scope (a connection identity),
// reserving through kv when it must: the allocator idempotent producers get
// their ids from, so the two kinds never share one.
type IDs interface {
	Next(ctx context.Context, scope string, kv Queen) (int64, error)
}

// Groups is the group coordinator's membership rule for a transactional
// offset commit: 0 and the group's protocol type, or the code every
// partition is refused with, as TxnOffsetCommit at version answers it.
// *coordinator.Coordinator satisfies it.
type Groups interface {
	TxnCommitCheck(cl coordinator.Client, group, memberID string, instanceID *string, generation int32, version int16) (int16, string)
	// TxnFence is the group's fence check a cluster-mode staging call
	// carries (ok false: none), and TxnFenceLost the answer when that
	// check failed (0: stage again with a fresh TxnFence).
	TxnFence(cl coordinator.Client, group string) (queen.KVOp, bool)
	TxnFenceLost(cl coordinator.Client, group string, pe *queen.PreconditionError) int16
}

// Client is who sent a request.
type Client struct {
	// Identity scopes transactional ids: two tenants' "tx-1" are two
	// transactions. "" is the node's own credential.
	Identity string
	// Queen carries the connection's credential; nil uses the manager's.
	Queen Queen
	// Owner is the connection, 0 for none. A binding whose owner closed
	// lingers for its timeout and then gives way (Disconnected).
	Owner uint64
}
