package node

// ConsumerGroupHeartbeat (key 68), v0-1: the version note is the version
// table's row (versions.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleConsumerGroupHeartbeat runs the KIP-848 heartbeat in package
// consumergroup. A join (epoch 0) of a group id the consumer side does not
// hold first asks the classic coordinator to release it: an empty classic
// group is taken over (Kafka's online upgrade), one with members is
// refused GROUP_ID_NOT_FOUND, as Kafka refuses it when
// group.consumer.migration.policy does not allow the upgrade. A share
// group's id is GROUP_ID_NOT_FOUND "Group … is not a consumer group.".
func (n *Node) handleConsumerGroupHeartbeat(ctx context.Context, c *transport.Conn, req *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	cl := n.consumerGroupClient(c)
	if held, _, code := n.shareGroups.Holds(ctx, cl.Identity, cl.KV, req.Group); held || code != 0 {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		if held {
			resp.ErrorCode, resp.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr("Group "+req.Group+" is not a consumer group.")
		}
		return resp, nil
	}
	if req.MemberEpoch == 0 && req.Group != "" {
		held, _, code := n.groups.Holds(ctx, cl.Identity, cl.KV, req.Group)
		if code == 0 && !held && !n.coord.ReleaseEmptyClassic(n.groupClient(c), req.Group) {
			resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Cannot upgrade classic group " + req.Group + " to consumer group because online upgrade is disabled."
			resp.ErrorMessage = &msg
			return resp, nil
		}
	}
	return n.groups.Heartbeat(ctx, cl, req), nil
}
