package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// DescribeGroups v0–v6 (v4 instance ids, v6 GROUP_ID_NOT_FOUND for a group
// that does not exist), authorized operations omitted (Kafka's sentinel).
func (n *Node) handleDescribeGroups(ctx context.Context, c *transport.Conn, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	return n.coord.DescribeGroups(ctx, n.groupClient(c), req), nil
}
