package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleInitProducerID: without a transactional id the answer is a
// producer id unique across nodes and restarts at epoch 0, whatever id and
// epoch the request carries. A transactional
// id is package txn's claim in single mode (an empty one is
// INVALID_REQUEST there, as Kafka's coordinator answers it); in cluster
// mode only the id's owner on the ring claims it, and another node answers
// NOT_COORDINATOR (issue 9).
func (n *Node) handleInitProducerID(ctx context.Context, c *transport.Conn, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	if req.TransactionalID != nil {
		if code := n.txnOwnerCode(*req.TransactionalID); code != 0 {
			resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
			resp.ProducerID, resp.ProducerEpoch = -1, -1
			resp.ErrorCode = code
			return resp, nil
		}
		resp := n.txns.InitProducerID(ctx, txnClient(c), req)
		if resp.ErrorCode == 0 {
			// The sequencer fences the claim's older epochs too.
			n.sequencer.Grant(producer.Key{Scope: c.Identity(), ID: resp.ProducerID}, resp.ProducerEpoch)
		}
		return resp, nil
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	scope := c.Identity()
	// A producer id and epoch in the request are not looked at: Kafka's
	// coordinator answers every non-transactional InitProducerId with a
	// fresh id at epoch 0, so that no client can bump (and so fence)
	// another client's producer by naming its id.
	id, err := n.producerIDs.Next(ctx, scope, c.Queen())
	if err != nil {
		code, throttle, fatal := faults.ProducerID(err)
		if fatal != nil {
			return nil, fatal
		}
		faults.Warn(c.Logger(), "producer id allocation failed", "producer id allocation failed", "err", err)
		resp.ErrorCode, resp.ThrottleMillis = code, throttle
		return resp, nil
	}
	n.sequencer.Grant(producer.Key{Scope: scope, ID: id}, 0)
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
