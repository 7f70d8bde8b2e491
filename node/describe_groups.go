package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleDescribeGroups describes groups; package coordinator answers.
func (n *Node) handleDescribeGroups(ctx context.Context, c *transport.Conn, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	return n.coord.DescribeGroups(ctx, n.groupClient(c), req), nil
}
