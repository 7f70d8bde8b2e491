package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// FindCoordinator v0–v6 (v4+ batched, one answer per key): this node for
// every key in single mode; in a cluster each group or transactional id's
// owner; share-group keys (v6) are INVALID_REQUEST, as on a broker without
// a share coordinator. Package coordinator decides.
func (n *Node) handleFindCoordinator(ctx context.Context, c *transport.Conn, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	return n.coord.FindCoordinator(ctx, n.groupClient(c), req), nil
}
