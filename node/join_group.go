package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleJoinGroup parks the request until the join phase completes, and
// the connection answers nothing else meanwhile: requests are answered in
// order, which is what a Kafka broker does too (clients heartbeat on their
// own schedule and do not pipeline behind a JoinGroup).
func (n *Node) handleJoinGroup(ctx context.Context, c *transport.Conn, req *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	return n.coord.JoinGroup(ctx, n.groupClient(c), req), nil
}
