package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/transport"
	"github.com/queen-mq/queen-kafka/txn"
)

// handleTxnOffsetCommit stages offsets beside the records, checked
// against the group as OffsetCommit is, and written by EndTxn(commit). In
// cluster mode clients send it to the GROUP's coordinator, which stages the
// offsets in Queen for the transactional id's owner (txn.Shared). v6 names
// topics by id (KIP-1319): resolved to names first, as OffsetCommit v10's
// are (offsets_by_id.go), and the answer named by id again.
func (n *Node) handleTxnOffsetCommit(ctx context.Context, c *transport.Conn, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	served := n.txnPartitions(c, true)
	if req.Version < 6 {
		return n.txnOffsetCommit(ctx, c, req, served), nil
	}
	ids := make([][16]byte, len(req.Topics))
	for i, t := range req.Topics {
		ids[i] = t.TopicID
	}
	names, codes := coordinator.IDTopics(ctx, n.groupClient(c), ids)
	for i := range req.Topics {
		req.Topics[i].Topic = names[i] // "" is never served, so never staged
	}
	resp := n.txnOffsetCommit(ctx, c, req, func(ctx context.Context, topic string, p int32) int16 {
		if topic == "" {
			return kerr.UnknownTopicID.Code // unresolved: not looked up again
		}
		return served(ctx, topic, p)
	})
	for i := range resp.Topics {
		resp.Topics[i].TopicID, resp.Topics[i].Topic = ids[i], ""
		if codes[i] != 0 {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = codes[i]
			}
		}
	}
	return resp, nil
}

func (n *Node) txnOffsetCommit(ctx context.Context, c *transport.Conn, req *kmsg.TxnOffsetCommitRequest, served txn.PartitionCheck) *kmsg.TxnOffsetCommitResponse {
	if n.txnShared != nil {
		return n.txnShared.TxnOffsetCommit(ctx, txnClient(c), req, served)
	}
	return n.txns.TxnOffsetCommit(ctx, txnClient(c), req, served)
}
