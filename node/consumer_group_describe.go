package node

// ConsumerGroupDescribe (key 69), v0-1: the version note is the version
// table's row (versions.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/authz"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleConsumerGroupDescribe describes consumer-protocol groups; package
// consumergroup answers. A group id the classic coordinator or a share group holds is
// GROUP_ID_NOT_FOUND "Group … is not a consumer group.", as Kafka answers.
// A group described without error carries its authorized operations when
// asked.
func (n *Node) handleConsumerGroupDescribe(ctx context.Context, c *transport.Conn, req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	resp := n.groups.Describe(ctx, n.consumerGroupClient(c), req)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if g.ErrorCode == 0 && req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = authz.Group
		}
		if held, _, _ := n.shares.Holds(ctx, c.Identity(), c.Queen(), g.Group); g.ErrorCode == kerr.GroupIDNotFound.Code && (held || n.coord.IsClassic(ctx, n.groupClient(c), g.Group)) {
			msg := "Group " + g.Group + " is not a consumer group."
			g.ErrorMessage = &msg
		}
	}
	return resp, nil
}
