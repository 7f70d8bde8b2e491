package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleLeaveGroup removes the members a request names.
func (n *Node) handleLeaveGroup(ctx context.Context, c *transport.Conn, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	return n.coord.LeaveGroup(ctx, n.groupClient(c), req), nil
}
