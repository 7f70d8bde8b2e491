package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleEndTxn ends a transaction. A commit is one POST /api/v1/transaction
// of the whole stage; an abort writes no record. From v5 (KIP-890) the
// answer carries the producer's next epoch, which the sequencer is told
// of.
func (n *Node) handleEndTxn(ctx context.Context, c *transport.Conn, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
	if code := n.txnOwnerCode(req.TransactionalID); code != 0 {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	resp := n.txns.EndTxn(ctx, txnClient(c), req)
	if resp.ErrorCode == 0 && resp.ProducerID >= 0 {
		// KIP-890's bump: the sequencer fences the epoch left behind too,
		// and the new epoch's sequences start at 0.
		n.sequencer.Grant(producer.Key{Scope: c.Identity(), ID: resp.ProducerID}, resp.ProducerEpoch)
	}
	return resp, nil
}
