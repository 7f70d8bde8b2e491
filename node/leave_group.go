package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup v0–v5: one member per request below v3, several from v3.
func (n *Node) handleLeaveGroup(ctx context.Context, c *Conn, req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	return n.coord.LeaveGroup(ctx, c.groupClient(), req), nil
}
