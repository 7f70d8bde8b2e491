package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit v2–v6: committed offsets are Queen KV rows (§10).
func (n *Node) handleOffsetCommit(ctx context.Context, c *Conn, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	return n.coord.OffsetCommit(ctx, c.groupClient(), req), nil
}
