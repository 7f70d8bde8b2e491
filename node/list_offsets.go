package node

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/queen"
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
// retry, see probeBudgets). No match is offset -1
// and timestamp -1, what offsetsForTimes turns into null. Note that this is
// append time, not the producer's CreateTime that a consumer sees on the
// record (seed 001's older "no match" text is superseded by issue 3).
// Leader epochs are -1, as everywhere in this facade.

// ListOffsets timestamp sentinels (ListOffsetsRequest in Kafka).
const (
	latestTimestamp                = -1
	earliestTimestamp              = -2
	maxTimestamp                   = -3
	earliestLocalTimestamp         = -4
	latestTieredTimestamp          = -5
	earliestPendingUploadTimestamp = -6
)

// sentinelSince is the version each sentinel arrived in (Kafka's
// timestampMinSupportedVersion).
var sentinelSince = map[int64]int16{
	latestTimestamp: 1, earliestTimestamp: 1, maxTimestamp: 7,
	earliestLocalTimestamp: 8, latestTieredTimestamp: 9, earliestPendingUploadTimestamp: 11,
}

// unsupportedTimestamp reports whether ts cannot be asked at version v.
func unsupportedTimestamp(ts int64, v int16) bool {
	since, ok := sentinelSince[ts]
	return ts < 0 && (!ok || v < since)
}

// offsetSearch is one partition's answer in the making.
type offsetSearch struct {
	topic  string
	part   string
	resp   *kmsg.ListOffsetsResponseTopicPartition
	target int64
	// The search interval: every record below lo is older than target, and
	// best (when found) is the first record at or above hi.
	lo, hi   int64
	found    bool
	bestOff  int64
	bestTS   int64
	probe    int64
	finished bool
}

func (n *Node) handleListOffsets(ctx context.Context, c *transport.Conn, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.Topics = make([]kmsg.ListOffsetsResponseTopic, len(req.Topics))
	var searches []*offsetSearch
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
			searches = append(searches, &offsetSearch{
				topic:  rt.Topic,
				part:   strconv.FormatInt(int64(rp.Partition), 10),
				resp:   sp,
				target: rp.Timestamp,
			})
		}
	}
	if len(searches) == 0 {
		return resp, nil
	}
	q := c.Queen()

	// Round 0: the bounds of every partition.
	results, err := probeOffsets(ctx, q, searches, func(*offsetSearch) int64 { return 0 }, false)
	if err != nil {
		faults.Log(c.Logger(), "fetch", err)
		return resp, failSearches(resp, searches, err)
	}
	var open, newest []*offsetSearch
	for i, s := range searches {
		r := &results[i]
		if r.Error == queen.FetchErrUnknownTopic {
			s.resp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			continue
		}
		s.lo, s.hi = r.LogStartOffset, r.HighWatermark
		switch s.target {
		case latestTimestamp:
			s.resp.Offset = r.HighWatermark
		case earliestTimestamp, earliestLocalTimestamp:
			s.resp.Offset = r.LogStartOffset
		case latestTieredTimestamp, earliestPendingUploadTimestamp:
			// Nothing is tiered: offset -1, timestamp -1.
		case maxTimestamp:
			if s.lo < s.hi {
				newest = append(newest, s)
			}
		default:
			if s.lo < s.hi {
				open = append(open, s)
			}
		}
	}

	// MAX_TIMESTAMP: the last record carries the largest append time, and
	// Kafka answers the EARLIEST offset holding the largest timestamp, so
	// the search below runs for that time with the last record as its best
	// answer so far.
	if len(newest) > 0 {
		results, err := probeOffsets(ctx, q, newest, func(s *offsetSearch) int64 { return s.hi - 1 }, true)
		if err != nil {
			faults.Log(c.Logger(), "fetch", err)
			return resp, failSearches(resp, newest, err)
		}
		for i, s := range newest {
			r := &results[i]
			if r.Error != "" || len(r.Records) == 0 || r.Records[0].Offset >= s.hi {
				continue // the log was emptied since the bounds were read: no match
			}
			rec := r.Records[0]
			s.target, s.found = queen.ParseTS(rec.TS).UnixMilli(), true
			s.bestOff, s.bestTS, s.hi = rec.Offset, s.target, rec.Offset
			if s.lo < s.hi {
				open = append(open, s)
			} else {
				s.resp.Offset, s.resp.Timestamp = s.bestOff, s.bestTS
			}
		}
	}

	// Then the binary searches, all partitions' probes in one call a round.
	for len(open) > 0 {
		for _, s := range open {
			s.probe = s.lo + (s.hi-s.lo)/2
		}
		results, err := probeOffsets(ctx, q, open, func(s *offsetSearch) int64 { return s.probe }, true)
		if err != nil {
			faults.Log(c.Logger(), "fetch", err)
			return resp, failSearches(resp, open, err)
		}
		still := open[:0]
		for i, s := range open {
			s.step(&results[i])
			switch {
			case !s.finished:
				still = append(still, s)
			case s.found:
				s.resp.Offset, s.resp.Timestamp = s.bestOff, s.bestTS
			}
		}
		open = still
	}
	return resp, nil
}

// step narrows the search with the first record at or after the probe.
func (s *offsetSearch) step(r *queen.FetchResult) {
	if r.Error != "" || len(r.Records) == 0 || r.Records[0].Offset >= s.hi {
		// Nothing stored in [probe, hi): the answer, if any, is best.
		s.hi = s.probe
	} else if rec, ts := r.Records[0], queen.ParseTS(r.Records[0].TS).UnixMilli(); ts >= s.target {
		s.hi, s.found = s.probe, true
		s.bestOff, s.bestTS = rec.Offset, ts
	} else {
		s.lo = rec.Offset + 1
	}
	s.finished = s.lo >= s.hi
}

// probeBudgets are the per-entry budgets a probe escalates through. Queen
// delivers a record past an entry's budget only to the first entry of a
// call, so a probe asks for a few KiB (one record and its neighbours); an
// entry whose first record is larger comes back empty within its bounds and
// is asked again with a larger budget, and past the last one alone in a
// call of its own, where its first record is always delivered.
var probeBudgets = []int{4 << 10, 256 << 10, queen.MaxFetchEntryBytes}

// probeOffsets reads the first record at or after offset(s) for every
// search (bounds only, when records is false), in calls of at most 1,024
// entries, without waiting.
func probeOffsets(ctx context.Context, q *queen.Client, searches []*offsetSearch, offset func(*offsetSearch) int64, records bool) ([]queen.FetchResult, error) {
	out := make([]queen.FetchResult, len(searches))
	pending := make([]int, len(searches))
	for i := range pending {
		pending[i] = i
	}
	for level := 0; len(pending) > 0; level++ {
		budget, size := 1, queen.MaxFetchEntries
		if records {
			budget = probeBudgets[min(level, len(probeBudgets)-1)]
			if level >= len(probeBudgets) {
				size = 1 // alone: the call's first record is always delivered
			}
		}
		var cut []int
		for from := 0; from < len(pending); from += size {
			idx := pending[from:min(from+size, len(pending))]
			entries := make([]queen.FetchEntry, 0, len(idx))
			for _, i := range idx {
				s := searches[i]
				entries = append(entries, queen.FetchEntry{Queue: s.topic, Partition: s.part, Offset: offset(s), MaxBytes: budget})
			}
			rs, err := q.Fetch(ctx, queen.FetchRequest{Entries: entries})
			if err != nil {
				return nil, err
			}
			for k, i := range idx {
				out[i] = rs[k]
				if records && rs[k].Error == "" && len(rs[k].Records) == 0 && entries[k].Offset < rs[k].HighWatermark && size > 1 {
					cut = append(cut, i)
				}
			}
		}
		pending = cut
	}
	return out, nil
}

// failSearches answers every partition still being looked up with the
// mapped Queen failure (a canceled call closes the connection instead).
func failSearches(resp *kmsg.ListOffsetsResponse, searches []*offsetSearch, err error) error {
	code, throttle, _, fatal := faults.ListOffsets(err)
	if fatal != nil {
		return fatal
	}
	resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
	for _, s := range searches {
		s.resp.ErrorCode = code
		s.resp.Offset, s.resp.Timestamp = -1, -1
	}
	return nil
}
