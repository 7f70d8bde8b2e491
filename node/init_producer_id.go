package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerId v0–v4, for idempotent producers. Without a transactional
// id the answer is a producer id unique across nodes and restarts at epoch
// 0, or — v3+ carrying an existing id and epoch — KIP-360's bump: the same
// id at epoch+1, with every sequence window of it starting over. A
// transactional id is refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which
// every client treats as fatal, until transactions exist.
func (n *Node) handleInitProducerID(ctx context.Context, c *Conn, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	scope := c.Identity()
	if req.Version >= 3 && req.ProducerID >= 0 && req.ProducerEpoch >= 0 {
		epoch, res := n.idem.seq.bump(producerKey{scope: scope, pid: req.ProducerID}, req.ProducerEpoch)
		switch res {
		case bumpGranted:
			resp.ProducerID, resp.ProducerEpoch = req.ProducerID, epoch
			return resp, nil
		case bumpFenced:
			// KIP-588: PRODUCER_FENCED from v4; older clients know it as
			// INVALID_PRODUCER_EPOCH.
			resp.ErrorCode = kerr.InvalidProducerEpoch.Code
			if req.Version >= 4 {
				resp.ErrorCode = kerr.ProducerFenced.Code
			}
			return resp, nil
		}
		// bumpExhausted: the id has no epoch left; a new id follows.
	}
	id, err := n.idem.ids.next(ctx, scope, c.Queen())
	if err != nil {
		code, throttle, fatal := producerIDFault(err)
		if fatal != nil {
			return nil, fatal
		}
		c.Logger().Warn("producer id allocation failed", "err", err)
		resp.ErrorCode, resp.ThrottleMillis = code, throttle
		return resp, nil
	}
	n.idem.seq.granted(producerKey{scope: scope, pid: id})
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
