package node

// DescribeShareGroupOffsets (key 90), v0-1: the version note is the version
// table's row (versions.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/shareadmin"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleDescribeShareGroupOffsets answers a share group's start offsets
// and lag, on the group's coordinator (package shareadmin).
func (n *Node) handleDescribeShareGroupOffsets(ctx context.Context, c *transport.Conn, req *kmsg.DescribeShareGroupOffsetsRequest) (kmsg.Response, error) {
	return n.shareAdmin.Describe(ctx, n.shareAdminCaller(c), req), nil
}

// shareAdminCaller is the connection as package shareadmin needs it.
func (n *Node) shareAdminCaller(c *transport.Conn) shareadmin.Caller {
	return shareadmin.Caller{KV: c.Queen(), Topics: n.cats.Topics(callerOf(c)), Log: shareadmin.QueenLog{Q: c.Queen()}}
}
