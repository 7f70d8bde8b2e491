package node

import "github.com/queen-mq/queen-kafka/transport"

// transactionV2 is the `transaction.version` level of KIP-890's protocol:
// the producer epoch bumps at every EndTxn v5, Produce v12+ adds its
// partition and TxnOffsetCommit v5+ its group implicitly. Kafka decides
// a request's protocol by its version; clients choose the version by the
// finalized level ApiVersions advertises (QUEEN_KAFKA_TRANSACTION_VERSION).
const transactionV2 = 2

// features is what ApiVersions v3+ advertises: transaction.version,
// supported 0–2 as by Kafka 4, finalized at the configured level.
func (n *Node) features() []transport.Feature {
	return []transport.Feature{{Name: "transaction.version", Min: 0, Max: transactionV2, Finalized: n.cfg.TxnVersion}}
}

// txnWindow is a window's ceiling: v2 under transaction version 2, below
// it old, the last version of the old protocol, so that a client that
// ignores the feature cannot drive the node into the protocol it refuses.
// A table bound to no node (the README's matrix) shows the default, 2.
func (n *Node) txnWindow(v2, old int16) int16 {
	if n == nil || n.cfg.TxnVersion >= transactionV2 {
		return v2
	}
	return old
}
