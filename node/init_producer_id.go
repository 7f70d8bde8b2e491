package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/producer"
)

// InitProducerId v0–v4. Without a transactional id the answer is a
// producer id unique across nodes and restarts at epoch 0, or — v3+
// carrying an existing id and epoch — KIP-360's bump: the same id at
// epoch+1, with every sequence window of it starting over. A transactional
// id is package txn's claim in single mode (an empty one is
// INVALID_REQUEST there, as Kafka's coordinator answers it); in cluster
// mode it is refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED at once, which
// every client treats as fatal, so that initTransactions() stops instead of
// retrying for max.block.ms against a node that cannot hold the stage.
func (n *Node) handleInitProducerID(ctx context.Context, c *Conn, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	if req.TransactionalID != nil {
		if n.cfg.Clustered() {
			resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
			resp.ProducerID, resp.ProducerEpoch = -1, -1
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return resp, nil
		}
		resp := n.txns.InitProducerID(ctx, c.txnClient(), req)
		if resp.ErrorCode == 0 {
			// The sequencer fences the claim's older epochs too.
			n.sequencer.Grant(producer.Key{Scope: c.Identity(), ID: resp.ProducerID}, resp.ProducerEpoch)
		}
		return resp, nil
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	scope := c.Identity()
	if req.Version >= 3 && req.ProducerID >= 0 && req.ProducerEpoch >= 0 {
		epoch, res := n.sequencer.Bump(producer.Key{Scope: scope, ID: req.ProducerID}, req.ProducerEpoch)
		switch res {
		case producer.BumpGranted:
			resp.ProducerID, resp.ProducerEpoch = req.ProducerID, epoch
			return resp, nil
		case producer.BumpFenced:
			// KIP-588: PRODUCER_FENCED from v4; older clients know it as
			// INVALID_PRODUCER_EPOCH.
			resp.ErrorCode = kerr.InvalidProducerEpoch.Code
			if req.Version >= 4 {
				resp.ErrorCode = kerr.ProducerFenced.Code
			}
			return resp, nil
		}
		// producer.BumpExhausted: the id has no epoch left; a new id follows.
	}
	id, err := n.producerIDs.Next(ctx, scope, c.Queen())
	if err != nil {
		code, throttle, fatal := producerIDFault(err)
		if fatal != nil {
			return nil, fatal
		}
		c.Logger().Warn("producer id allocation failed", "err", err)
		resp.ErrorCode, resp.ThrottleMillis = code, throttle
		return resp, nil
	}
	n.sequencer.Grant(producer.Key{Scope: scope, ID: id}, 0)
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
