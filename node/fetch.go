package node

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

// Fetch v4–v6. One request is one call to Queen's fetch route (chunked at
// 1,024 partitions), and the long poll is that route's own: max_wait_ms
// (clamped to 30 s) and min_bytes ride the call. Partitions are filled in
// request order against the partition and response budgets (the response
// capped at 32 MiB); the first record of the response is always delivered
// whole, so an oversized record never stalls a consumer. Each partition's
// records are re-encoded as ONE uncompressed RecordBatch v2 carrying their
// original key, value, headers and timestamp. Both isolation levels read
// the same log: nothing uncommitted is ever in it.
const (
	maxFetchResponse = 32 << 20
	// maxQueenEntryBytes is the fetch route's own clamp of an entry's budget.
	maxQueenEntryBytes = 8 << 20
	// minChunkWait is the shortest long-poll slice a chunked fetch gives one
	// chunk, so that more than 1,024 partitions still wait rather than spin.
	minChunkWait = 100 * time.Millisecond
)

// fetchSlot is one partition of a fetch request on its way through.
type fetchSlot struct {
	resp *kmsg.FetchResponseTopicPartition
	max  int // partition_max_bytes
	res  *queen.FetchResult
}

func (n *Node) handleFetch(ctx context.Context, c *Conn, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	var (
		slots   []fetchSlot        // the partitions Queen is asked about...
		entries []queen.FetchEntry // ...and their entries, one for one
		refused bool               // a partition already carries an error
	)
	topics := n.topicVerdicts(c, fetchFault, &resp.ThrottleMillis)
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		tv, err := topics.of(ctx, rt.Topic)
		if err != nil {
			return nil, err
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			// Empty, never null: librdkafka and sarama refuse a null record set
			// ("invalid MessageSetSize -1"), which is what a real broker never sends.
			sp.RecordBatches = []byte{}
			if req.IsolationLevel == 1 {
				// read_committed gets an empty aborted list, as from Kafka:
				// nothing aborted is ever in this log.
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			if code, ok := topics.refusal(ctx, rt.Topic, &tv, rp.Partition); ok {
				sp.ErrorCode = code
				refused = refused || code != 0
				continue
			}
			if rp.FetchOffset < 0 {
				// Queen refuses a negative offset for the whole call.
				sp.ErrorCode = kerr.OffsetOutOfRange.Code
				refused = true
				continue
			}
			slots = append(slots, fetchSlot{resp: sp, max: int(rp.PartitionMaxBytes)})
			entries = append(entries, queen.FetchEntry{
				Queue:     rt.Topic,
				Partition: strconv.FormatInt(int64(rp.Partition), 10),
				Offset:    rp.FetchOffset,
				MaxBytes:  queenEntryBudget(rp.PartitionMaxBytes),
			})
		}
	}
	if len(entries) == 0 {
		return resp, nil
	}

	wait := time.Duration(min(max(req.MaxWaitMillis, 0), queen.MaxFetchWaitMs)) * time.Millisecond
	if refused {
		// An error is an answer: like Kafka (and Queen's own long poll,
		// which returns at once on an erroring entry), do not park on it.
		wait = 0
	}
	fctx, cancel := n.untilStop(ctx)
	results, err := fetchChunked(fctx, c.Queen(), entries, wait, int(max(req.MinBytes, 0)))
	cancel()
	if err != nil && n.stopped() && ctx.Err() == nil {
		// A long poll cut by the stop: nothing was read, and a stopping
		// node's connection is closed, which the consumer retries elsewhere.
		return nil, errStopping
	}
	if err != nil {
		logQueenFault(c, "fetch", err)
		code, throttle, _, fatal := fetchFault(err)
		if fatal != nil {
			return nil, fatal
		}
		resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
		for i := range slots {
			slots[i].resp.ErrorCode = code // watermarks stay -1, no records
		}
		return resp, nil
	}
	for i := range slots {
		slots[i].res = &results[i]
	}

	budget := maxFetchResponse
	if req.Version >= 3 && req.MaxBytes >= 0 {
		budget = min(budget, int(req.MaxBytes))
	}
	fillFetch(slots, budget)
	return resp, nil
}

// fillFetch answers every asked partition from its Queen result, in request
// order, against the partition budgets and the response budget. The first
// record of the response is always taken whole; after it a partition takes
// records while they fit, and one whose next record does not fit is an
// empty read with its real watermarks.
func fillFetch(slots []fetchSlot, budget int) {
	first := true
	var recs []recordbatch.Fetched
	for i := range slots {
		s := &slots[i]
		r := s.res
		switch r.Error {
		case "":
		case queen.FetchErrUnknownTopic:
			// The queue is gone since the catalogue last looked: no bounds.
			s.resp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			continue
		case queen.FetchErrOutOfRange:
			s.resp.ErrorCode = kerr.OffsetOutOfRange.Code
			s.resp.HighWatermark, s.resp.LastStableOffset, s.resp.LogStartOffset = r.HighWatermark, r.HighWatermark, r.LogStartOffset
			continue
		default:
			s.resp.ErrorCode = kerr.UnknownServerError.Code
			continue
		}
		s.resp.HighWatermark, s.resp.LastStableOffset, s.resp.LogStartOffset = r.HighWatermark, r.HighWatermark, r.LogStartOffset
		recs = recs[:0]
		size := recordbatch.HeaderLen
		for _, fr := range r.Records {
			rec := queen.DecodePayload(fr.Payload, queen.ParseTS(fr.TS))
			if rec.Timestamp < 0 {
				rec.Timestamp = -1 // an unreadable ts is no timestamp, not year 1
			}
			est := recordBound(&rec)
			if !first && (size+est > s.max || size+est > budget) {
				break
			}
			first = false
			recs = append(recs, recordbatch.Fetched{Offset: fr.Offset, Record: rec})
			size += est
		}
		if len(recs) > 0 {
			s.resp.RecordBatches = recordbatch.AppendFetchBatch(nil, recs)
			budget -= len(s.resp.RecordBatches)
		}
	}
}

// queenEntryBudget asks Queen for a little more than the Kafka partition
// budget: Queen counts stored bytes, and a stored envelope is base64, about
// four thirds of the record it re-encodes to. The Kafka budget is applied
// exactly afterwards.
func queenEntryBudget(partitionMax int32) int {
	b := int64(max(partitionMax, 1))
	b += b/3 + 1024
	return int(min(b, maxQueenEntryBytes))
}

// recordBound is an upper bound on r's encoded size in a batch: every
// varint at its widest, plus the bytes themselves.
func recordBound(r *queen.Record) int {
	n := 5 + 1 + 10 + 5 + 5 + len(r.Key) + 5 + len(r.Value) + 5
	for _, h := range r.Headers {
		n += 10 + len(h.Key) + len(h.Value)
	}
	return n
}

// fetchChunked runs entries through Queen's fetch route, at most 1,024 per
// call. Up to 1,024 it is one call carrying the whole long poll. Beyond, a
// first pass reads every chunk without waiting; when that gathered less
// than minBytes, the remaining wait is spent in slices, one chunk after
// another, until a chunk has data or the wait is over.
func fetchChunked(ctx context.Context, q *queen.Client, entries []queen.FetchEntry, wait time.Duration, minBytes int) ([]queen.FetchResult, error) {
	if len(entries) <= queen.MaxFetchEntries {
		return q.Fetch(ctx, queen.FetchRequest{Entries: entries, MaxWaitMs: int(wait.Milliseconds()), MinBytes: minBytes})
	}
	deadline := time.Now().Add(wait)
	results := make([]queen.FetchResult, len(entries))
	chunks := (len(entries) + queen.MaxFetchEntries - 1) / queen.MaxFetchEntries
	for round := 0; ; round++ {
		got, errored := 0, false
		for from := 0; from < len(entries); from += queen.MaxFetchEntries {
			to := min(from+queen.MaxFetchEntries, len(entries))
			call := queen.FetchRequest{Entries: entries[from:to], MinBytes: minBytes}
			if round > 0 {
				left := time.Until(deadline)
				if left <= 0 {
					return results, nil
				}
				call.MaxWaitMs = int(min(left, max(left/time.Duration(chunks), minChunkWait)).Milliseconds())
			}
			rs, err := q.Fetch(ctx, call)
			if err != nil {
				return nil, err
			}
			copy(results[from:to], rs)
			for _, r := range rs {
				errored = errored || r.Error != ""
				for _, rec := range r.Records {
					got += max(len(rec.Payload), 1)
				}
			}
			if round > 0 && (got >= max(minBytes, 1) || errored) {
				return results, nil
			}
		}
		if got >= minBytes || errored || wait <= 0 || time.Until(deadline) <= 0 {
			return results, nil
		}
	}
}
