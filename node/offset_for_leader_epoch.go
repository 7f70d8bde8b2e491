package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/fetchread"
	"github.com/queen-mq/queen-kafka/transport"
)

// OffsetForLeaderEpoch answers the end offset of a leader epoch, which a
// consumer compares with its position to detect a truncated log.
//
// Every partition here has ONE leader epoch, -1, the epoch Metadata,
// ListOffsets, OffsetFetch and every fetched batch's partition_leader_epoch
// already report: Queen's log is never truncated or rewritten, so it never
// begins a new epoch. Hence:
//   - leader_epoch -1 is answered epoch -1 and the high watermark (one bounds
//     probe of Queen's fetch route, as ListOffsets' -1), the end of the only
//     epoch. Kafka answers -1 itself "undefined", because there -1 means "no
//     epoch"; here it is the epoch every record carries, and answering it
//     undefined would make a client reset a position that nothing truncated;
//   - any other leader_epoch is one this log never had: epoch -1 and end
//     offset -1, Kafka's UNDEFINED answer for an epoch beyond its cache;
//   - current_leader_epoch is not fenced, as ListOffsets does not fence
//     it: the epoch never changes, so no client's can be stale.
//
// An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION
// and a failed Queen call maps as ListOffsets' does: the answer is built
// from ListOffsets' LATEST for every partition named.

// partitionLeaderEpoch is every partition's one leader epoch (see above);
// TestLeaderEpochIsMinusOneEverywhere holds every API that reports one to it.
const partitionLeaderEpoch = -1

func (n *Node) handleOffsetForLeaderEpoch(ctx context.Context, c *transport.Conn, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	// The end offset is ListOffsets' LATEST: the same topic checks,
	// refusals, bounds probe and Queen fault mapping, asked in one call.
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = lo.MaxVersion()
	for _, rt := range req.Topics {
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp = rp.Partition, fetchread.Latest
			lt.Partitions = append(lt.Partitions, lp)
		}
		lo.Topics = append(lo.Topics, lt)
	}
	r, err := n.handleListOffsets(ctx, c, lo)
	if err != nil {
		return nil, err
	}
	latest := r.(*kmsg.ListOffsetsResponse)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.ThrottleMillis = latest.ThrottleMillis
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(req.Topics))
	for i, rt := range req.Topics {
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			lp := &latest.Topics[i].Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset = rp.Partition, lp.ErrorCode, partitionLeaderEpoch, -1
			if lp.ErrorCode == 0 && rp.LeaderEpoch == partitionLeaderEpoch {
				sp.EndOffset = lp.Offset
			}
		}
	}
	return resp, nil
}
