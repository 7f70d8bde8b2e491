package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleAddPartitionsToTxn names the partitions a transactional Produce
// may stage, each checked against the catalogue first.
func (n *Node) handleAddPartitionsToTxn(ctx context.Context, c *transport.Conn, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
	if code := n.txnOwnerCode(req.TransactionalID); code != 0 {
		return n.txns.AddPartitionsToTxn(ctx, txnClient(c), req, func(context.Context, string, int32) int16 { return code }), nil
	}
	return n.txns.AddPartitionsToTxn(ctx, txnClient(c), req, n.txnPartitions(c, false)), nil
}
