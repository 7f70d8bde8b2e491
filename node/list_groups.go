package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups v0–v5: states_filter (v4) and types_filter (v5) honoured;
// every group is "classic" (v5 group_type), the only protocol served.
func (n *Node) handleListGroups(ctx context.Context, c *Conn, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	return n.coord.ListGroups(ctx, c.groupClient(), req), nil
}
