package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddPartitionsToTxn v0–v3 (v4 is KIP-890's broker-to-broker verification,
// a different request). The partitions a transactional Produce may stage,
// each checked against the catalogue first.
func (n *Node) handleAddPartitionsToTxn(ctx context.Context, c *Conn, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
	return n.txns.AddPartitionsToTxn(ctx, c.txnClient(), req, n.txnPartitions(c)), nil
}
