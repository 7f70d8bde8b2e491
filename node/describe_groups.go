package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups v0–v6 (v4 instance ids, v6 GROUP_ID_NOT_FOUND for a group
// that does not exist), authorized operations omitted (Kafka's sentinel).
func (n *Node) handleDescribeGroups(ctx context.Context, c *Conn, req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	return n.coord.DescribeGroups(ctx, c.groupClient(), req), nil
}
