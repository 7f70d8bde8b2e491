package node

// AlterShareGroupOffsets (key 91), v0: the version note is the version
// table's row (versions.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleAlterShareGroupOffsets sets an empty share group's start offsets
// (package shareadmin).
func (n *Node) handleAlterShareGroupOffsets(ctx context.Context, c *transport.Conn, req *kmsg.AlterShareGroupOffsetsRequest) (kmsg.Response, error) {
	return n.shareAdmin.Alter(ctx, n.shareAdminCaller(c), req), nil
}
