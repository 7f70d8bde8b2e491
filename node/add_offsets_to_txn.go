package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleAddOffsetsToTxn names the consumer group whose offsets the
// transaction commits.
func (n *Node) handleAddOffsetsToTxn(ctx context.Context, c *transport.Conn, req *kmsg.AddOffsetsToTxnRequest) (kmsg.Response, error) {
	if code := n.txnOwnerCode(req.TransactionalID); code != 0 {
		resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	return n.txns.AddOffsetsToTxn(ctx, txnClient(c), req), nil
}
