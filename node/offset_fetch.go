package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleOffsetFetch is answered at every node: the store is the answer.
func (n *Node) handleOffsetFetch(ctx context.Context, c *transport.Conn, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	if req.Version >= 10 {
		return n.coord.OffsetFetchByID(ctx, n.groupClient(c), req), nil
	}
	return n.coord.OffsetFetch(ctx, n.groupClient(c), req), nil
}
