package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup v0–v5 (v3 instance id, v5 protocol checks); a follower parks until the leader's assignment arrives.
func (n *Node) handleSyncGroup(ctx context.Context, c *Conn, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	return n.coord.SyncGroup(ctx, c.groupClient(), req), nil
}
