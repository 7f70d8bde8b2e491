package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleOffsetDelete deletes a group's committed offsets; a topic a live
// member subscribes to is refused.
func (n *Node) handleOffsetDelete(ctx context.Context, c *transport.Conn, req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	return n.coord.OffsetDelete(ctx, n.groupClient(c), req), nil
}
