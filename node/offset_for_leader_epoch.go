package node

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// OffsetForLeaderEpoch v0–v4 (KIP-101, KIP-320): the end offset of a
// leader epoch, which a consumer compares with its position to detect a
// truncated log.
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
//   - current_leader_epoch (v2+) is not fenced, as ListOffsets does not fence
//     it: the epoch never changes, so no client's can be stale.
//
// Version notes: v1 answers the epoch; v2 adds current_leader_epoch and
// throttle_time_ms; v3 adds replica_id (a follower's id, or -1/-2 for a
// consumer), which, as in Kafka, changes nothing in the answer; v4 is
// flexible. An unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION
// and a failed Queen call maps as ListOffsets' does.
// partitionLeaderEpoch is every partition's one leader epoch (see above);
// TestLeaderEpochIsMinusOneEverywhere holds every API that reports one to it.
const partitionLeaderEpoch = -1

func (n *Node) handleOffsetForLeaderEpoch(ctx context.Context, c *Conn, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.Topics = make([]kmsg.OffsetForLeaderEpochResponseTopic, len(req.Topics))
	topics := n.topicVerdicts(c, listOffsetsFault, &resp.ThrottleMillis)
	var (
		probes  []*offsetSearch // only topic and part: bounds probes
		answers []*kmsg.OffsetForLeaderEpochResponseTopicPartition
	)
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.OffsetForLeaderEpochResponseTopicPartition, len(rt.Partitions))
		tv, err := topics.of(ctx, rt.Topic)
		if err != nil {
			return nil, err
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			if code, ok := topics.refusal(ctx, rt.Topic, &tv, rp.Partition); ok {
				sp.ErrorCode = code
				continue
			}
			if rp.LeaderEpoch != partitionLeaderEpoch {
				continue // an epoch this log never had: undefined
			}
			probes = append(probes, &offsetSearch{topic: rt.Topic, part: strconv.FormatInt(int64(rp.Partition), 10)})
			answers = append(answers, sp)
		}
	}
	if len(probes) == 0 {
		return resp, nil
	}
	results, err := probeOffsets(ctx, c.Queen(), probes, func(*offsetSearch) int64 { return 0 }, false)
	if err != nil {
		logQueenFault(c, "fetch", err)
		code, throttle, _, fatal := listOffsetsFault(err)
		if fatal != nil {
			return nil, fatal
		}
		resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
		for _, sp := range answers {
			sp.ErrorCode = code
		}
		return resp, nil
	}
	for i, sp := range answers {
		if results[i].Error == queen.FetchErrUnknownTopic {
			sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			continue
		}
		sp.EndOffset = results[i].HighWatermark
	}
	return resp, nil
}
