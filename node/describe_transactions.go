package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// handleDescribeTransactions describes transactional ids of the
// connection's identity: state, producer id and epoch, timeout, start and
// partitions. In cluster mode any node answers for any id, from its
// qk:txn: row and its stage. Versions: see its row in the version table.
func (n *Node) handleDescribeTransactions(ctx context.Context, c *transport.Conn, req *kmsg.DescribeTransactionsRequest) (kmsg.Response, error) {
	return n.txns.DescribeTransactions(ctx, txnClient(c), req), nil
}
