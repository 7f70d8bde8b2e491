package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// SyncGroup v0–v5 (v3 instance id, v5 protocol checks); a follower parks until the leader's assignment arrives.
func (n *Node) handleSyncGroup(ctx context.Context, c *transport.Conn, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	return n.coord.SyncGroup(ctx, n.groupClient(c), req), nil
}
