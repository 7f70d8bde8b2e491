package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleEndTxn ends a transaction. A commit is one POST /api/v1/transaction
// of the whole stage; an abort writes no record.
func (n *Node) handleEndTxn(ctx context.Context, c *transport.Conn, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
	if code := n.txnOwnerCode(req.TransactionalID); code != 0 {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	return n.txns.EndTxn(ctx, txnClient(c), req), nil
}
