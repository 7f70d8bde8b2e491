package node

// ShareGroupDescribe (key 77), v1: the version note is the version
// table's row (versions.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/authz"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleShareGroupDescribe describes share groups; package sharegroup
// answers. A group described without error carries its authorized
// operations when asked.
func (n *Node) handleShareGroupDescribe(ctx context.Context, c *transport.Conn, req *kmsg.ShareGroupDescribeRequest) (kmsg.Response, error) {
	resp := n.shares.Describe(ctx, n.consumerGroupClient(c), req)
	if req.IncludeAuthorizedOperations {
		for i := range resp.Groups {
			if g := &resp.Groups[i]; g.ErrorCode == 0 {
				g.AuthorizedOperations = authz.Group
			}
		}
	}
	return resp, nil
}
