package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator v0–v3: this node for every key in single mode; in a
// cluster a group's owner, and a transaction key refused (package
// coordinator decides).
func (n *Node) handleFindCoordinator(ctx context.Context, c *Conn, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	return n.coord.FindCoordinator(ctx, c.groupClient(), req), nil
}
