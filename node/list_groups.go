package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups v0–v4, states_filter honoured.
func (n *Node) handleListGroups(ctx context.Context, c *Conn, req *kmsg.ListGroupsRequest) (kmsg.Response, error) {
	return n.coord.ListGroups(ctx, c.groupClient(), req), nil
}
