package node

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/txn"
)

// newTxns builds the transaction coordinator (package txn) from the node's
// configuration: the five QUEEN_KAFKA_TXN_* caps, the producer id
// allocator idempotent producers draw from, the group coordinator for
// TxnOffsetCommit's membership rule, and a clock (the wall clock but in
// tests). Cluster mode
// builds one too and never reaches it: InitProducerId refuses a
// transactional id there, so no binding exists and every other
// transactional request is INVALID_TXN_STATE.
func newTxns(cfg Config, q txn.Queen, log *slog.Logger, ids *producer.IDs, groups txn.Groups, clk clock.Clock) *txn.Manager {
	return txn.New(txn.Config{
		Queen:  q,
		IDs:    txnIDs{ids},
		Groups: groups,
		Clock:  clk,
		Log:    log.With("component", "txn"),
		Limits: txn.Limits{
			MaxBytes:       cfg.TxnMaxBytes,
			MaxRecords:     cfg.TxnMaxRecords,
			MaxStagedBytes: cfg.TxnMaxStagedBytes,
			MaxOpen:        cfg.TxnMaxOpen,
			MaxTimeout:     cfg.TxnMaxTimeout,
		},
		Fault:  txnFault,
		NodeID: int32(cfg.NodeID),
	})
}

// txnIDs is the node's producer id allocator as package txn asks for it.
type txnIDs struct{ ids *producer.IDs }

func (a txnIDs) Next(ctx context.Context, scope string, kv txn.Queen) (int64, error) {
	return a.ids.Next(ctx, scope, kv)
}

// txnClient is the connection as package txn needs it: the identity that
// scopes transactional ids, the credential its calls carry, and the
// connection itself, whose close starts the linger of what it holds.
func (c *Conn) txnClient() txn.Client {
	return txn.Client{Identity: c.Identity(), Queen: c.Queen(), Owner: c.id}
}

// txnPartitions is the node's verdict on the partitions a transaction
// names (AddPartitionsToTxn, TxnOffsetCommit), as Apache Kafka gives it: a
// topic that is not served, or a partition past its width, is
// UNKNOWN_TOPIC_OR_PARTITION; a bad name INVALID_TOPIC_EXCEPTION; a
// catalogue Queen would not give is answered by the transaction rule,
// retriable. Each topic is looked up once per request.
func (n *Node) txnPartitions(c *Conn) txn.PartitionCheck {
	var throttle int32
	v := n.topicVerdicts(c, txnRule.apply, &throttle)
	return func(ctx context.Context, topic string, partition int32) int16 {
		tv, err := v.of(ctx, topic)
		if err != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		code, refused := v.refusal(ctx, topic, &tv, partition)
		if refused && code == 0 {
			return kerr.CoordinatorNotAvailable.Code // a bare throttle
		}
		return code
	}
}
