package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator answers a FindCoordinator v0-3. Single mode names this
// node for every key, group or transaction. In a cluster either key is its
// owner on the rendezvous ring over the live set (issue 9: a transactional
// id and a group of the same name share an owner, which is harmless).
func (c *Coordinator) FindCoordinator(ctx context.Context, cl Client, req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	fail := func(code int16, msg string) *kmsg.FindCoordinatorResponse {
		resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
		if req.Version >= 1 {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	var b Broker
	switch req.CoordinatorType {
	case 0:
		if !validGroupID(req.CoordinatorKey, true) {
			return fail(kerr.InvalidGroupID.Code, "group id longer than 255 characters")
		}
		o, err := c.own.Owner(req.CoordinatorKey)
		if err != nil {
			return fail(kerr.CoordinatorNotAvailable.Code, "the node registry is unavailable")
		}
		b = o
	case 1:
		o, err := c.own.Owner(req.CoordinatorKey)
		if err != nil {
			return fail(kerr.CoordinatorNotAvailable.Code, "the node registry is unavailable")
		}
		b = o
	default:
		return fail(kerr.InvalidRequest.Code, "unknown coordinator type")
	}
	resp.NodeID, resp.Host, resp.Port = b.NodeID, b.Host, b.Port
	return resp
}
