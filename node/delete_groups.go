package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// DeleteGroups v0–v3: offsets first, the group index last; v3 adds a
// per-group error message, the error's description.
func (n *Node) handleDeleteGroups(ctx context.Context, c *transport.Conn, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	return n.coord.DeleteGroups(ctx, n.groupClient(c), req), nil
}
