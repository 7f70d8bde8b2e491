package fetchread

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// ListOffsets timestamp sentinels (ListOffsetsRequest in Kafka).
const (
	Latest                = -1
	Earliest              = -2
	MaxTimestamp          = -3
	EarliestLocal         = -4
	LatestTiered          = -5
	EarliestPendingUpload = -6
)

// Search is one ListOffsets partition's answer in the making: the offset
// Target (a timestamp or a sentinel) names in Topic's partition Part,
// written into Resp.
type Search struct {
	Topic  string
	Part   string
	Resp   *kmsg.ListOffsetsResponseTopicPartition
	Target int64
	// The search interval: every record below lo is older than Target, and
	// best (when found) is the first record at or above hi.
	lo, hi   int64
	found    bool
	bestOff  int64
	bestTS   int64
	probe    int64
	finished bool
}

// Offsets answers searches from Queen's fetch route, read through q: one
// bounds probe of every partition (latest and earliest come from it), then
// the last record of each MAX_TIMESTAMP partition, then binary searches
// over append time, every open partition's probe in one call a round. A
// failed call returns its error and failed, the searches it left
// unanswered.
func Offsets(ctx context.Context, q *queen.Client, searches []*Search) (failed []*Search, err error) {
	// Round 0: the bounds of every partition.
	results, err := probeOffsets(ctx, q, searches, func(*Search) int64 { return 0 }, false)
	if err != nil {
		return searches, err
	}
	var open, newest []*Search
	for i, s := range searches {
		r := &results[i]
		if r.Error == queen.FetchErrUnknownTopic {
			s.Resp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			continue
		}
		s.lo, s.hi = r.LogStartOffset, r.HighWatermark
		switch s.Target {
		case Latest:
			s.Resp.Offset = r.HighWatermark
		case Earliest, EarliestLocal:
			s.Resp.Offset = r.LogStartOffset
		case LatestTiered, EarliestPendingUpload:
			// Nothing is tiered: offset -1, timestamp -1.
		case MaxTimestamp:
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
		results, err := probeOffsets(ctx, q, newest, func(s *Search) int64 { return s.hi - 1 }, true)
		if err != nil {
			return newest, err
		}
		for i, s := range newest {
			r := &results[i]
			if r.Error != "" || len(r.Records) == 0 || r.Records[0].Offset >= s.hi {
				continue // the log was emptied since the bounds were read: no match
			}
			rec := r.Records[0]
			s.Target, s.found = queen.ParseTS(rec.TS).UnixMilli(), true
			s.bestOff, s.bestTS, s.hi = rec.Offset, s.Target, rec.Offset
			if s.lo < s.hi {
				open = append(open, s)
			} else {
				s.Resp.Offset, s.Resp.Timestamp = s.bestOff, s.bestTS
			}
		}
	}

	// Then the binary searches, all partitions' probes in one call a round.
	for len(open) > 0 {
		for _, s := range open {
			s.probe = s.lo + (s.hi-s.lo)/2
		}
		results, err := probeOffsets(ctx, q, open, func(s *Search) int64 { return s.probe }, true)
		if err != nil {
			return open, err
		}
		still := open[:0]
		for i, s := range open {
			s.step(&results[i])
			switch {
			case !s.finished:
				still = append(still, s)
			case s.found:
				s.Resp.Offset, s.Resp.Timestamp = s.bestOff, s.bestTS
			}
		}
		open = still
	}
	return nil, nil
}

// step narrows the search with the first record at or after the probe.
func (s *Search) step(r *queen.FetchResult) {
	if r.Error != "" || len(r.Records) == 0 || r.Records[0].Offset >= s.hi {
		// Nothing stored in [probe, hi): the answer, if any, is best.
		s.hi = s.probe
	} else if rec, ts := r.Records[0], queen.ParseTS(r.Records[0].TS).UnixMilli(); ts >= s.Target {
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
func probeOffsets(ctx context.Context, q *queen.Client, searches []*Search, offset func(*Search) int64, records bool) ([]queen.FetchResult, error) {
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
				entries = append(entries, queen.FetchEntry{Queue: s.Topic, Partition: s.Part, Offset: offset(s), MaxBytes: budget})
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
