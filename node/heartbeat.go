package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat v0–v4 (v3 instance id; no error in the sync phase: seed 001's deviation).
func (n *Node) handleHeartbeat(ctx context.Context, c *Conn, req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	return n.coord.Heartbeat(ctx, c.groupClient(), req), nil
}
