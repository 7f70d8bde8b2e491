package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleListTransactions lists the transactional ids of the connection's
// identity with Kafka's filters: those this node holds in single mode,
// the whole fleet's (read from Queen) at any node in cluster mode.
// Versions: see its row in the version table.
func (n *Node) handleListTransactions(ctx context.Context, c *transport.Conn, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
	return n.txns.ListTransactions(ctx, txnClient(c), req), nil
}
