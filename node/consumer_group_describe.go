package node

// ConsumerGroupDescribe (key 69), v0-1: the version note is the version
// table's row (versions.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleConsumerGroupDescribe describes consumer-protocol groups; package
// consumergroup answers.
func (n *Node) handleConsumerGroupDescribe(ctx context.Context, c *transport.Conn, req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	return n.groups.Describe(ctx, n.consumerGroupClient(c), req), nil
}
