package node

// ShareAcknowledge (key 79), v1-2: the version note is the version table's
// row (versions.go); the work is package sharefetch's.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/transport"
)

func (n *Node) handleShareAcknowledge(ctx context.Context, c *transport.Conn, req *kmsg.ShareAcknowledgeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	return resp, n.shares.Acknowledge(ctx, c, n.cats.Verdicts(callerOf(c), faults.Fetch, &resp.ThrottleMillis), req, resp)
}
