package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleDeleteGroups deletes groups: offsets first, the group index last.
func (n *Node) handleDeleteGroups(ctx context.Context, c *transport.Conn, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	return n.coord.DeleteGroups(ctx, n.groupClient(c), req), nil
}
