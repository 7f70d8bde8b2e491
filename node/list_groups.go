package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleListGroups lists the groups of the caller's identity, filtered as
// asked; every group is "classic", the only protocol served.
func (n *Node) handleListGroups(ctx context.Context, c *transport.Conn, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	return n.coord.ListGroups(ctx, n.groupClient(c), req), nil
}
