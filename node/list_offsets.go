package node

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/fetchread"
	"github.com/queen-mq/queen-kafka/transport"
)

// ListOffsets answers each partition's offset for a timestamp. -1 (latest)
// and -2 (earliest) come from one bounds probe of Queen's fetch route
// (maxWaitMs 0): the high watermark and the log start. -3 (MAX_TIMESTAMP),
// the earliest offset holding the largest timestamp, is exact on the append
// clock (below): the first record of the last push. A negative timestamp
// that is no sentinel, or one below the version that introduced it, is
// UNSUPPORTED_VERSION for its partition, as Kafka's ReplicaManager answers
// it (isListOffsetsTimestampUnsupported). Versions: see its row in
// versions.go.
//
// A concrete timestamp is answered EXACTLY, on Queen's APPEND clock: the
// fetch route's record `ts` is the commit time of the push that stored the
// record, and it never decreases along a partition. So the answer — the
// earliest offset whose append time is at or after the target, with that
// record's append time — is found by binary search over [log start, high
// watermark), the first record at or after a probe per step, O(log n)
// probes, and every partition asked about is probed in the same call each
// round (a record too large for a probe's budget costs that partition a
// retry, see fetchread.Offsets). No match is offset -1
// and timestamp -1, what offsetsForTimes turns into null. Note that this is
// append time, not the producer's CreateTime that a consumer sees on the
// record (seed 001's older "no match" text is superseded by issue 3).
// Leader epochs are -1, as everywhere in this facade.

// sentinelSince is the version each sentinel arrived in (Kafka's
// timestampMinSupportedVersion).
var sentinelSince = map[int64]int16{
	fetchread.Latest: 1, fetchread.Earliest: 1, fetchread.MaxTimestamp: 7,
	fetchread.EarliestLocal: 8, fetchread.LatestTiered: 9, fetchread.EarliestPendingUpload: 11,
}

// unsupportedTimestamp reports whether ts cannot be asked at version v.
func unsupportedTimestamp(ts int64, v int16) bool {
	since, ok := sentinelSince[ts]
	return ts < 0 && (!ok || v < since)
}

func (n *Node) handleListOffsets(ctx context.Context, c *transport.Conn, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	var searches []*fetchread.Search
	topics := n.cats.Verdicts(callerOf(c), faults.ListOffsets, &resp.ThrottleMillis)
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ListOffsetsResponseTopicPartition, len(rt.Partitions))
		tv, err := topics.Of(ctx, rt.Topic)
		if err != nil {
			return nil, err
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, partitionLeaderEpoch
			if unsupportedTimestamp(rp.Timestamp, req.Version) {
				sp.ErrorCode = kerr.UnsupportedVersion.Code
				continue
			}
			if code, ok := topics.Refusal(ctx, rt.Topic, &tv, rp.Partition); ok {
				sp.ErrorCode = code
				continue
			}
			searches = append(searches, &fetchread.Search{
				Topic:  rt.Topic,
				Part:   strconv.FormatInt(int64(rp.Partition), 10),
				Resp:   sp,
				Target: rp.Timestamp,
			})
		}
	}
	if len(searches) == 0 {
		return resp, nil
	}
	if failed, err := fetchread.Offsets(ctx, c.Queen(), searches); err != nil {
		faults.Log(c.Logger(), "fetch", err)
		return resp, failSearches(resp, failed, err)
	}
	return resp, nil
}

// failSearches answers every partition still being looked up with the
// mapped Queen failure (a canceled call closes the connection instead).
func failSearches(resp *kmsg.ListOffsetsResponse, searches []*fetchread.Search, err error) error {
	code, throttle, _, fatal := faults.ListOffsets(err)
	if fatal != nil {
		return fatal
	}
	resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
	for _, s := range searches {
		s.Resp.ErrorCode = code
		s.Resp.Offset, s.Resp.Timestamp = -1, -1
	}
	return nil
}
