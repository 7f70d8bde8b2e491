package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// LeaveGroup v0–v5: one member per request below v3, several from v3.
func (n *Node) handleLeaveGroup(ctx context.Context, c *transport.Conn, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	return n.coord.LeaveGroup(ctx, n.groupClient(c), req), nil
}
