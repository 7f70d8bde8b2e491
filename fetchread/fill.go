package fetchread

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

const (
	// MaxResponse is the ceiling on one fetch response's records.
	MaxResponse = 32 << 20
	// minChunkWait is the shortest long-poll slice a chunked fetch gives one
	// chunk, so that more than 1,024 partitions still wait rather than spin.
	minChunkWait = 100 * time.Millisecond
)

// Conn is what a fill reads through and hands its batches over to: the
// caller's Queen client and logger, and the hold of the node-wide budget
// until the response is written (transport.Conn is one).
type Conn interface {
	Queen() *queen.Client
	Logger() *slog.Logger
	HoldAnswer(b *budget.Budget, n int64)
}

// Slot is one partition of a fetch request on its way through.
type Slot struct {
	Resp   *kmsg.FetchResponseTopicPartition
	Max    int   // partition_max_bytes
	Codec  int   // its batch's compression (recordbatch.Codec*)
	Offset int64 // fetch_offset
	Next   int64 // the offset after the last record taken (Offset when none)
	// Batch is its topic's max.message.bytes: how far the response's first
	// push may run past the budgets (Answer); 0 takes its first record only.
	Batch   int
	taken   int  // records in Resp.RecordBatches
	charged int  // bytes of Resp.RecordBatches paid on the node's budget
	more    bool // its first push may go on past what Queen answered
}

// Unread readies sp, a partition's answer to req, as not read yet:
// no records, no error, watermarks unknown.
func Unread(sp *kmsg.FetchResponseTopicPartition, req *kmsg.FetchRequest) {
	// Empty, never null: librdkafka and sarama refuse a null record set
	// ("invalid MessageSetSize -1"), which is what a real broker never sends.
	sp.RecordBatches = []byte{}
	if req.IsolationLevel == 1 {
		// read_committed gets an empty aborted list, as from Kafka:
		// nothing aborted is ever in this log.
		sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
}

// Fill fills a fetch response's partitions from Queen's answers, in
// request order, against the partition budgets and the response budget.
// The first record of the response is always taken whole, and with it the
// rest of the Queen push it came in (up to its topic's max.message.bytes):
// Kafka answers the first batch whole past every budget (KIP-74), and a
// client reading "a batch" (segmentio/kafka-go's Conn) expects all of a
// produced batch, which the facade wrote as one push. After it a partition
// takes records while they fit, and one whose next record does not fit is
// an empty read with its real watermarks.
type Fill struct {
	enc    *recordbatch.Encoder
	mem    *budget.Budget // the node's fetch response bytes; nil: unbounded
	held   int64          // what the response's batches hold of mem
	budget int            // bytes the response has left (negative past an oversized first record)
	taken  int            // records in the response
	full   bool           // a record did not fit what the response had left
}

// New is the fill of one response to req: the 32 MiB ceiling, or the
// request's max_bytes below it. Its batches are encoded by enc and paid
// on mem.
func New(req *kmsg.FetchRequest, enc *recordbatch.Encoder, mem *budget.Budget) *Fill {
	f := &Fill{budget: MaxResponse, enc: enc, mem: mem}
	if req.Version >= 3 && req.MaxBytes >= 0 {
		f.budget = min(f.budget, int(req.MaxBytes))
	}
	return f
}

// HandOver gives what the response holds of the node's budget to c, which
// gives it back once the response is written (or the connection closes):
// the batches live until then. Without a connection it is given back now.
func (f *Fill) HandOver(c Conn) {
	held := f.held
	f.held = 0
	switch {
	case held == 0:
	case c == nil:
		f.mem.Release(held)
	default:
		c.HoldAnswer(f.mem, held)
	}
}

// Spent reports that the response takes no further chunk: its first record
// is in, and a record did not fit what is left (or nothing could). A later
// partition might still hold a record small enough, but Kafka may answer
// the partitions past the budget empty, and the consumer fetches again.
func (f *Fill) Spent() bool {
	return f.taken > 0 && (f.full || f.budget <= recordbatch.HeaderLen)
}

// Fail answers every slot code, with no records and watermarks unknown
// (the read of them failed).
func (f *Fill) Fail(slots []Slot, code int16) {
	for i := range slots {
		f.unfill(&slots[i])
		slots[i].Resp.ErrorCode = code
	}
}

// unfill takes a partition's answer back out of the response (before it
// is read again, or failed): no records, no error, watermarks unknown.
func (f *Fill) unfill(s *Slot) {
	if s.charged > 0 {
		f.mem.Release(int64(s.charged))
		f.held -= int64(s.charged)
		s.charged = 0
	}
	f.budget += len(s.Resp.RecordBatches)
	f.taken -= s.taken
	f.full = f.full && s.taken == 0 // what it held is free again
	s.taken, s.Next, s.more = 0, s.Offset, false
	s.Resp.RecordBatches = []byte{}
	s.Resp.ErrorCode = 0
	s.Resp.HighWatermark, s.Resp.LastStableOffset, s.Resp.LogStartOffset = -1, -1, -1
}

// Answer answers s from its Queen result r.
func (f *Fill) Answer(s *Slot, r *queen.FetchResult) {
	f.unfill(s)
	switch r.Error {
	case "":
	case queen.FetchErrUnknownTopic:
		// The queue is gone since the catalogue last looked: no bounds.
		s.Resp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	case queen.FetchErrOutOfRange:
		s.Resp.ErrorCode = kerr.OffsetOutOfRange.Code
		s.Resp.HighWatermark, s.Resp.LastStableOffset, s.Resp.LogStartOffset = r.HighWatermark, r.HighWatermark, r.LogStartOffset
		return
	default:
		s.Resp.ErrorCode = kerr.UnknownServerError.Code
		return
	}
	s.Resp.HighWatermark, s.Resp.LastStableOffset, s.Resp.LogStartOffset = r.HighWatermark, r.HighWatermark, r.LogStartOffset
	var recs []recordbatch.Fetched
	size := recordbatch.HeaderLen
	// firstPush: every record so far is of the push of the response's
	// first record.
	firstPush := f.taken == 0
	var ts time.Time // fr.TS parsed, once per run of records sharing it (a push)
	for i := range r.Records {
		fr := &r.Records[i]
		sameTS := i > 0 && fr.TS == r.Records[i-1].TS
		if !sameTS {
			ts = queen.ParseTS(fr.TS)
		}
		rec := envelope.DecodePayload(fr.Payload, ts)
		if rec.Timestamp < 0 {
			rec.Timestamp = -1 // an unreadable ts is no timestamp, not year 1
		}
		est := recordBound(&rec)
		// Of the same push: the next offset, with the same commit time (a
		// push's records share their segment's ts, §6). Two pushes
		// committed in the same microsecond look like one, which only lets
		// the first push run on within its bound.
		firstPush = firstPush && (i == 0 || sameTS && fr.TS != "" && fr.Offset == r.Records[i-1].Offset+1)
		if f.taken+len(recs) > 0 && (size+est > s.Max || size+est > f.budget) {
			// The response's first push comes whole (KIP-74), as far as
			// its topic's largest batch: each partition's records of one
			// produce are one push, and a push shares its ts (§6).
			if !firstPush || size+est > s.Batch {
				f.full = f.full || size+est > f.budget
				break
			}
		}
		recs = append(recs, recordbatch.Fetched{Offset: fr.Offset, Record: rec})
		size += est
	}
	if len(recs) > 0 {
		// Compressed or not, the batch is never larger than the plain one
		// the budgets above were counted against.
		b := f.enc.AppendFetchBatch(nil, recs, s.Codec)
		switch {
		case f.charge(len(b)):
			s.charged = len(b)
		case f.taken > 0:
			// The node holds its fetch memory: as past the response's
			// budget, an empty read with real watermarks.
			f.full = true
			return
		case len(recs) > 1:
			// The response's first record is taken whatever the node
			// holds, as whatever its own budget: the consumer progresses.
			recs = recs[:1]
			b = f.enc.AppendFetchBatch(nil, recs, s.Codec)
		}
		s.Resp.RecordBatches = b
		f.budget -= len(s.Resp.RecordBatches)
		f.taken += len(recs)
		s.taken = len(recs)
		s.Next = recs[len(recs)-1].Offset + 1
		// Queen's answer ended inside what may still be the first push:
		// it may be worth asking again for the push's whole length.
		s.more = firstPush && len(recs) == len(r.Records) && s.Next < r.HighWatermark && size < s.Batch
	}
}

// take answers s from r, what Queen answered of entry e, and reads it
// again for its first push's whole length when r ended inside it
// (Slot.more; readFirstPush). It is called before the next partition is
// answered: only then is s still the response's first.
func (f *Fill) take(ctx context.Context, c Conn, s *Slot, e queen.FetchEntry, r *queen.FetchResult) {
	f.Answer(s, r)
	if s.more {
		f.readFirstPush(ctx, c, s, e)
	}
}

// readFirstPush reads s again from its offset, asking Queen for its
// topic's largest batch, when its answer holds the response's first record
// and Queen's answer (to e, which asked e.MaxBytes; 0: unknown) ended
// inside what may be that record's push (Slot.more). An answer that asked
// as much already is not asked again. If the read fails, the first answer
// stands.
func (f *Fill) readFirstPush(ctx context.Context, c Conn, s *Slot, e queen.FetchEntry) {
	want := min(StoredBytes(s.Batch), queen.MaxFetchEntryBytes)
	if e.MaxBytes >= want {
		s.more = false
		return
	}
	e.MaxBytes = want
	rs, err := c.Queen().Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{e}})
	if err != nil || len(rs) != 1 {
		if err != nil {
			faults.Log(c.Logger(), "fetch", err)
		}
		return
	}
	f.Answer(s, &rs[0])
	s.more = false
}

// charge pays n bytes of batches on the node's budget, if it has them.
func (f *Fill) charge(n int) bool {
	if f.mem == nil {
		return true
	}
	if !f.mem.TryAcquire(int64(n)) {
		return false
	}
	f.held += int64(n)
	return true
}

// ask sets the maxBytes of es, the entries of one call for slots ss: each
// its partition budget, but never more than the response has left. Queen's
// budget is per entry and counts what it delivers (a call fills entries in
// order up to its own fixed 64 MiB), so this is as close as the route lets
// a call come to "what the response has left"; capping the sum of what the
// entries ask instead would starve every partition past the first few
// whenever partition budgets are far above the data, as they mostly are.
func (f *Fill) ask(ss []*Slot, es []queen.FetchEntry) {
	left := StoredBytes(max(f.budget, 1))
	for i := range es {
		es[i].MaxBytes = min(StoredBytes(ss[i].Max), left, queen.MaxFetchEntryBytes)
	}
}

// StoredBytes is the Queen budget for b bytes of Kafka records: a little
// more, since Queen counts stored bytes and a stored envelope is base64,
// about four thirds of the record it re-encodes to. The Kafka budget is
// applied exactly afterwards (Answer).
func StoredBytes(b int) int {
	return b + b/3 + 1024
}

// recordBound is an upper bound on r's encoded size in a batch: every
// varint at its widest, plus the bytes themselves.
func recordBound(r *envelope.Record) int {
	n := 5 + 1 + 10 + 5 + 5 + len(r.Key) + 5 + len(r.Value) + 5
	for _, h := range r.Headers {
		n += 10 + len(h.Key) + len(h.Value)
	}
	return n
}

// Read runs entries through Queen's fetch route, at most 1,024 per call,
// filling slots as each answer arrives. Up to 1,024 it is one call carrying
// the whole long poll. Beyond, a first pass reads every chunk without
// waiting; when that gathered less than minBytes, the remaining wait is
// spent in slices, one chunk after another, until a chunk has data or the
// wait is over. No chunk is asked once the response budget is spent. A
// chunk Queen refuses as a bad or too large request fails its own
// partitions only; any other failure is the whole fetch's, returned.
func (f *Fill) Read(ctx context.Context, c Conn, slots []Slot, entries []queen.FetchEntry, wait time.Duration, minBytes int) error {
	chunks := (len(entries) + queen.MaxFetchEntries - 1) / queen.MaxFetchEntries
	deadline := time.Now().Add(wait)
	for round := 0; ; round++ {
		got, answered := 0, false
		for from := 0; from < len(entries); from += queen.MaxFetchEntries {
			if f.Spent() {
				return nil
			}
			to := min(from+queen.MaxFetchEntries, len(entries))
			waitMs := 0
			switch {
			case chunks == 1:
				waitMs = int(wait.Milliseconds())
			case round > 0:
				left := time.Until(deadline)
				if left <= 0 {
					return nil
				}
				waitMs = int(min(left, max(left/time.Duration(chunks), minChunkWait)).Milliseconds())
			}
			ss := make([]*Slot, to-from)
			for i := range ss {
				ss[i] = &slots[from+i]
			}
			g, a, err := f.readChunk(ctx, c, ss, entries[from:to], waitMs, minBytes)
			if err != nil {
				return err
			}
			got, answered = got+g, answered || a
			if round > 0 && (got >= max(minBytes, 1) || answered) {
				return nil
			}
		}
		if chunks == 1 || got >= minBytes || answered || wait <= 0 || time.Until(deadline) <= 0 {
			return nil
		}
	}
}

// readChunk reads one chunk's partitions ss (entries es) and fills them.
// got is Queen's delivered payload bytes (each record at least 1, as its
// minBytes counts), answered that an error is among the answers.
func (f *Fill) readChunk(ctx context.Context, c Conn, ss []*Slot, es []queen.FetchEntry, waitMs, minBytes int) (got int, answered bool, err error) {
	for _, s := range ss {
		f.unfill(s) // read again: this answer replaces the last one
	}
	f.ask(ss, es)
	rs, err := c.Queen().Fetch(ctx, queen.FetchRequest{Entries: es, MaxWaitMs: waitMs, MinBytes: minBytes})
	if err != nil {
		if k := queen.KindOf(err); k != queen.KindBadRequest && k != queen.KindTooLarge {
			return 0, false, err
		}
		// Refused whole, and refused again if resent: this chunk's
		// partitions fail, the others are read.
		faults.Log(c.Logger(), "fetch", err)
		code, _, _, _ := faults.Fetch(err)
		for _, s := range ss {
			s.Resp.ErrorCode = code
		}
		return 0, true, nil
	}
	for i := range rs {
		for _, rec := range rs[i].Records {
			got += max(len(rec.Payload), 1)
		}
		answered = answered || rs[i].Error != ""
		f.take(ctx, c, ss[i], es[i], &rs[i])
	}
	return got, answered, nil
}
