package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleFindCoordinator answers this node for every key in single mode and,
// in a cluster, each group or transactional id's owner. Package coordinator
// decides.
func (n *Node) handleFindCoordinator(ctx context.Context, c *transport.Conn, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	return n.coord.FindCoordinator(ctx, n.groupClient(c), req), nil
}
