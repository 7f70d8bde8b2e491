package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleSyncGroup hands out the leader's assignment; a follower parks
// until it arrives.
func (n *Node) handleSyncGroup(ctx context.Context, c *transport.Conn, req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	return n.coord.SyncGroup(ctx, n.groupClient(c), req), nil
}
