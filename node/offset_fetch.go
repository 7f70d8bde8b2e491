package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch v1–v9 (v8 several groups), answered at every node: the store is the answer.
func (n *Node) handleOffsetFetch(ctx context.Context, c *Conn, req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	return n.coord.OffsetFetch(ctx, c.groupClient(), req), nil
}
