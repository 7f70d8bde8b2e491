package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups v0–v2: offsets first, the group index last.
func (n *Node) handleDeleteGroups(ctx context.Context, c *Conn, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	return n.coord.DeleteGroups(ctx, c.groupClient(), req), nil
}
