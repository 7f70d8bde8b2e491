package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator answers a FindCoordinator v0-6.
//
// Version notes:
//   - v1: key type (0 group, 1 transaction), error message;
//   - v3: flexible;
//   - v4: batched keys (KIP-699), one answer with its own error per key;
//   - v5: the client accepts TRANSACTION_ABORTABLE (KIP-890), which this
//     API never sends;
//   - v6: key type 2, a share-group partition (KIP-932). The facade runs
//     no share coordinator, and Kafka without one answers INVALID_REQUEST
//     per key, as it does type 2 below v6 and any unknown type.
//
// Single mode names this node for every key, group or transaction. In a
// cluster either key is its owner on the rendezvous ring over the live set,
// whichever node is asked (issue 9: a transactional id and a group of the
// same name share an owner, which is harmless). A node that cannot name
// owners (its registry heartbeat fails) names the owner among its peers
// (ownership.Owners.Redirect), which drop it once its row expires.
func (c *Coordinator) FindCoordinator(_ context.Context, _ Client, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version <= 3 {
		a := c.coordinatorFor(req.CoordinatorType, req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = a.ErrorCode, a.NodeID, a.Host, a.Port
		if req.Version >= 1 {
			resp.ErrorMessage = a.ErrorMessage
		}
		return resp
	}
	resp.Coordinators = make([]kmsg.FindCoordinatorResponseCoordinator, 0, len(req.CoordinatorKeys))
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, c.coordinatorFor(req.CoordinatorType, key))
	}
	return resp
}

// coordinatorFor is one key's answer: its owner, or an error with Kafka's
// "no node" (-1, "", -1).
func (c *Coordinator) coordinatorFor(typ int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	a := kmsg.NewFindCoordinatorResponseCoordinator()
	a.Key = key
	fail := func(code int16, msg string) kmsg.FindCoordinatorResponseCoordinator {
		a.ErrorCode, a.ErrorMessage, a.NodeID, a.Port = code, &msg, -1, -1
		return a
	}
	switch typ {
	case 0:
		if !validGroupID(key, true) {
			return fail(kerr.InvalidGroupID.Code, "group id longer than 255 characters")
		}
	case 1:
	default:
		return fail(kerr.InvalidRequest.Code, "unsupported coordinator type (this facade coordinates groups and transactions only)")
	}
	o, err := c.own.Owner(key)
	if err != nil {
		var ok bool
		if o, ok = c.own.Redirect(key); !ok {
			return fail(kerr.CoordinatorNotAvailable.Code, "the node registry is unavailable")
		}
	}
	a.NodeID, a.Host, a.Port = o.NodeID, o.Host, o.Port
	return a
}
