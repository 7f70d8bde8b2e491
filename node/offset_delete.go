package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetDelete v0: a topic a live member subscribes to is refused.
func (n *Node) handleOffsetDelete(ctx context.Context, c *Conn, req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	return n.coord.OffsetDelete(ctx, c.groupClient(), req), nil
}
