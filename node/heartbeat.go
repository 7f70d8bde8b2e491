package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleHeartbeat keeps a member alive; no error in the sync phase (seed
// 001's deviation).
func (n *Node) handleHeartbeat(ctx context.Context, c *transport.Conn, req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	return n.coord.Heartbeat(ctx, n.groupClient(c), req), nil
}
