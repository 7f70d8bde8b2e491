package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups v0–v3: offsets first, the group index last; v3 adds a
// per-group error message, the error's description.
func (n *Node) handleDeleteGroups(ctx context.Context, c *Conn, req *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
	return n.coord.DeleteGroups(ctx, c.groupClient(), req), nil
}
