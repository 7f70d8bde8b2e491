package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/authz"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleDescribeGroups describes groups; package coordinator answers. From
// v3 a group described without error carries its authorized operations
// when asked, as KafkaApis sets them after the coordinator answers.
func (n *Node) handleDescribeGroups(ctx context.Context, c *transport.Conn, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	resp := n.coord.DescribeGroups(ctx, n.groupClient(c), req)
	if req.Version >= 3 && req.IncludeAuthorizedOperations {
		for i := range resp.Groups {
			if g := &resp.Groups[i]; g.ErrorCode == 0 {
				g.AuthorizedOperations = authz.Group
			}
		}
	}
	return resp, nil
}
