package node

// DeleteShareGroupOffsets (key 92), v0: the version note is the version
// table's row (versions.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleDeleteShareGroupOffsets forgets an empty share group's state for
// whole topics (package shareadmin).
func (n *Node) handleDeleteShareGroupOffsets(ctx context.Context, c *transport.Conn, req *kmsg.DeleteShareGroupOffsetsRequest) (kmsg.Response, error) {
	return n.shareAdmin.Delete(ctx, n.shareAdminCaller(c), req), nil
}
