package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit v2–v6: committed offsets are Queen KV rows (§10).
//
// A partition this node cannot serve — its topic is not in the catalogue,
// or it lies past the topic's width — is answered UNKNOWN_TOPIC_OR_PARTITION
// and never written, as Apache Kafka answers a commit for a partition its
// metadata does not hold. Without that, a consumer committing on revoke
// just after its topic was deleted writes the old position back after
// DeleteTopics removed it, and a topic recreated under the name is resumed
// at that stale offset, skipping its first records. The rest of the request
// goes to the coordinator as it came.
func (n *Node) handleOffsetCommit(ctx context.Context, c *Conn, req *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
	refused := n.unservedCommitPartitions(ctx, c, req)
	if len(refused) == 0 {
		return n.coord.OffsetCommit(ctx, c.groupClient(), req), nil
	}
	kept := *req
	kept.Topics = nil
	for _, t := range req.Topics {
		kt := t
		kt.Partitions = nil
		for _, p := range t.Partitions {
			if !refused[topicPartition{t.Topic, p.Partition}] {
				kt.Partitions = append(kt.Partitions, p)
			}
		}
		if len(kt.Partitions) > 0 {
			kept.Topics = append(kept.Topics, kt)
		}
	}
	answered := map[topicPartition]int16{}
	if len(kept.Topics) > 0 {
		for _, t := range n.coord.OffsetCommit(ctx, c.groupClient(), &kept).Topics {
			for _, p := range t.Partitions {
				answered[topicPartition{t.Topic, p.Partition}] = p.ErrorCode
			}
		}
	}
	// The answer lists every partition of the request, in request order.
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			tp := topicPartition{t.Topic, p.Partition}
			if refused[tp] {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				rp.ErrorCode = answered[tp]
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

type topicPartition struct {
	topic     string
	partition int32
}

// unservedCommitPartitions names the partitions of req that this node's
// catalogue does not hold. A catalogue that cannot be read at all refuses
// nothing: the commit then meets Queen's failure in the coordinator and is
// answered for it there.
func (n *Node) unservedCommitPartitions(ctx context.Context, c *Conn, req *kmsg.OffsetCommitRequest) map[topicPartition]bool {
	var refused map[topicPartition]bool
	for _, t := range req.Topics {
		width, exists, err := n.topicWidth(ctx, c, t.Topic)
		if err != nil {
			return nil
		}
		for _, p := range t.Partitions {
			if !exists || p.Partition < 0 || p.Partition >= width {
				if refused == nil {
					refused = map[topicPartition]bool{}
				}
				refused[topicPartition{t.Topic, p.Partition}] = true
			}
		}
	}
	return refused
}
