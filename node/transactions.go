package node

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/transport"
	"github.com/queen-mq/queen-kafka/txn"
)

// newTxns builds the transaction coordinator (package txn) from the node's
// configuration: the five QUEEN_KAFKA_TXN_* caps, the producer id
// allocator idempotent producers draw from, the group coordinator for
// TxnOffsetCommit's membership rule, and a clock (the wall clock but in
// tests). In cluster mode it holds the transactional ids this node owns on
// the ring, and their stages are in Queen (txn.QueenStages), written by
// every node's txn.Shared.
func newTxns(cfg config.Facade, q txn.Queen, log *slog.Logger, ids *producer.IDs, groups txn.Groups, clk clock.Clock) *txn.Manager {
	var stages txn.Stages
	if cfg.Clustered() {
		stages = txn.QueenStages{Limits: txnLimits(cfg), Clock: func() int64 { return clk.Now().UnixMilli() }, Log: log.With("component", "txn")}
	}
	return txn.New(txn.Config{
		Queen:   q,
		IDs:     txnIDs{ids},
		Groups:  groups,
		Clock:   clk,
		Log:     log.With("component", "txn"),
		Limits:  txnLimits(cfg),
		Fault:   faults.TransactionCode,
		NodeID:  int32(cfg.NodeID),
		Stages:  stages,
		Cluster: cfg.Clustered(),
		// KIP-890's implicit add; EndTxn v5 is kept away by the window.
		TransactionV2: cfg.TxnVersion >= transactionV2,
	})
}

// newTxnShared is cluster mode's staging half (txn.Shared), the same caps.
func newTxnShared(cfg config.Facade, q txn.Queen, log *slog.Logger, groups txn.Groups, clk clock.Clock) *txn.Shared {
	return txn.NewShared(txn.SharedConfig{Queen: q, Groups: groups, Limits: txnLimits(cfg), Clock: clk,
		Log: log.With("component", "txn"), Fault: faults.TransactionCode, NodeID: int32(cfg.NodeID),
		TransactionV2: cfg.TxnVersion >= transactionV2})
}

// txnLimits is the five QUEEN_KAFKA_TXN_* caps and Queen's body ceiling.
func txnLimits(cfg config.Facade) txn.Limits {
	return txn.Limits{
		MaxBytes:       cfg.TxnMaxBytes,
		MaxRecords:     cfg.TxnMaxRecords,
		MaxStagedBytes: cfg.TxnMaxStagedBytes,
		MaxOpen:        cfg.TxnMaxOpen,
		MaxTimeout:     cfg.TxnMaxTimeout,
		MaxCommitBody:  cfg.QueenMaxBody,
	}
}

// txnOwnerCode gates a request of transactional id to its coordinator: 0
// in single mode and at the id's owner on the ring, NOT_COORDINATOR at
// another node (the client finds the coordinator again), and
// COORDINATOR_NOT_AVAILABLE while no owner is known.
func (n *Node) txnOwnerCode(id string) int16 {
	if n.cluster == nil {
		return 0
	}
	o, err := n.cluster.owners.Owner(id)
	switch {
	case err != nil:
		return kerr.CoordinatorNotAvailable.Code
	case o.NodeID != n.cluster.self.ID:
		return kerr.NotCoordinator.Code
	}
	return 0
}

// txnAdmit is the transactional Produce's check before sequencing: the
// owner's binding in single mode, the qk:txn: row in cluster mode.
func (n *Node) txnAdmit(ctx context.Context, c *transport.Conn, b *txn.Batch) (int16, string) {
	if n.cluster != nil && !n.cluster.vouched() {
		// The stage is in Queen KV, which this node cannot reach (its
		// heartbeat is failing): waiting out a call per batch would run
		// the transaction past its timeout. Its Metadata already names a
		// survivor as leader; send the producer there.
		return kerr.NotLeaderForPartition.Code, "this node cannot reach the registry; refresh metadata and produce to the partition's leader"
	}
	if n.txnShared != nil {
		return n.txnShared.Admit(ctx, txnClient(c), b)
	}
	return n.txns.Admit(txnClient(c), b)
}

// txnStageAll stages the sequenced batches of one transactional Produce:
// in cluster mode in one KV call for the request, not one per partition.
func (n *Node) txnStageAll(ctx context.Context, c *transport.Conn, bs []*txn.Batch) []txn.Outcome {
	if n.txnShared != nil {
		return n.txnShared.ProduceAll(ctx, txnClient(c), bs)
	}
	return n.txns.ProduceAll(ctx, txnClient(c), bs)
}

// txnIDs is the node's producer id allocator as package txn asks for it.
type txnIDs struct{ ids *producer.IDs }

func (a txnIDs) Next(ctx context.Context, scope string, kv txn.Queen) (int64, error) {
	return a.ids.Next(ctx, scope, kv)
}

// txnClient is the connection as package txn needs it: the identity that
// scopes transactional ids, the credential its calls carry, and the
// connection itself, whose close starts the linger of what it holds.
func txnClient(c *transport.Conn) txn.Client {
	return txn.Client{Identity: c.Identity(), Queen: c.Queen(), Owner: c.ID()}
}

// txnPartitions is the node's verdict on the partitions a transaction
// names (AddPartitionsToTxn, TxnOffsetCommit), as Apache Kafka gives it: a
// topic that is not served, or a partition past its width, is
// UNKNOWN_TOPIC_OR_PARTITION; a bad name INVALID_TOPIC_EXCEPTION; a
// catalogue Queen would not give is answered by the transaction rule,
// retriable. Each topic is looked up once per request. fresh looks a topic
// the catalogue does not hold up again after a listing (TxnOffsetCommit,
// which names topics the client may have learned of elsewhere, as
// OffsetCommit does).
func (n *Node) txnPartitions(c *transport.Conn, fresh bool) txn.PartitionCheck {
	var throttle int32
	v := n.cats.Verdicts(callerOf(c), faults.Transaction, &throttle)
	if fresh {
		v.FreshOnMiss()
	}
	return func(ctx context.Context, topic string, partition int32) int16 {
		tv, err := v.Of(ctx, topic)
		if err != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		code, refused := v.Refusal(ctx, topic, &tv, partition)
		if refused && code == 0 {
			return kerr.CoordinatorNotAvailable.Code // a bare throttle
		}
		return code
	}
}
