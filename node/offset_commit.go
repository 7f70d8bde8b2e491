package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleOffsetCommit: committed offsets are Queen KV rows (§10), written
// by the coordinator. A partition this node cannot serve — its topic is not
// in the connection's catalogue, or it lies past the topic's width — is
// answered UNKNOWN_TOPIC_OR_PARTITION and never written; the coordinator
// asks the catalogue through the client's Topics
// (catalogue.Catalogues.Topics).
func (n *Node) handleOffsetCommit(ctx context.Context, c *transport.Conn, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	if req.Version >= 10 {
		return n.coord.OffsetCommitByID(ctx, n.groupClient(c), req), nil
	}
	return n.coord.OffsetCommit(ctx, n.groupClient(c), req), nil
}

type topicPartition struct {
	topic     string
	partition int32
}
