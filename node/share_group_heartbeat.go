package node

// ShareGroupHeartbeat (key 76), v1: the version note is the version
// table's row (versions.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleShareGroupHeartbeat runs the KIP-932 membership in package
// sharegroup.
func (n *Node) handleShareGroupHeartbeat(ctx context.Context, c *transport.Conn, req *kmsg.ShareGroupHeartbeatRequest) (kmsg.Response, error) {
	return n.shareGroups.Heartbeat(ctx, n.consumerGroupClient(c), req), nil
}
