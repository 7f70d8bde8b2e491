package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleTxnOffsetCommit stages offsets beside the records, checked
// against the group as OffsetCommit is, and written by EndTxn(commit). In
// cluster mode clients send it to the GROUP's coordinator, which stages the
// offsets in Queen for the transactional id's owner (txn.Shared).
func (n *Node) handleTxnOffsetCommit(ctx context.Context, c *transport.Conn, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	if n.txnShared != nil {
		return n.txnShared.TxnOffsetCommit(ctx, txnClient(c), req, n.txnPartitions(c, true)), nil
	}
	return n.txns.TxnOffsetCommit(ctx, txnClient(c), req, n.txnPartitions(c, true)), nil
}
