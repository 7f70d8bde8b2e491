package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// ListGroups v0–v5: states_filter (v4) and types_filter (v5) honoured;
// every group is "classic" (v5 group_type), the only protocol served.
func (n *Node) handleListGroups(ctx context.Context, c *transport.Conn, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	return n.coord.ListGroups(ctx, n.groupClient(c), req), nil
}
