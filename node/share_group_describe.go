package node

// ShareGroupDescribe (key 77), v1: the version note is the version
// table's row (versions.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleShareGroupDescribe describes share groups; package sharegroup
// answers.
func (n *Node) handleShareGroupDescribe(ctx context.Context, c *transport.Conn, req *kmsg.ShareGroupDescribeRequest) (kmsg.Response, error) {
	return n.shareGroups.Describe(ctx, n.consumerGroupClient(c), req), nil
}
