package node

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/fetchsession"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/transport"
)

// A Fetch is one call to Queen's fetch route (chunked at 1,024
// partitions), and the long poll is that route's own: max_wait_ms
// (clamped to 30 s) and min_bytes ride the call. Partitions are filled in
// request order against the partition and response budgets (the response
// capped at 32 MiB); the first record of the response is always delivered
// whole, so an oversized record never stalls a consumer. Each partition's
// records are re-encoded as ONE RecordBatch v2 carrying their
// original key, value, headers and timestamp, compressed with the codec the
// topic's compression.type (else QUEEN_KAFKA_FETCH_COMPRESSION) names, where
// the request's version carries it (catalogue.TopicConfig.FetchCodec says
// why). Both isolation levels read the same log: nothing uncommitted is
// ever in it.
//
// An incremental fetch (package fetchsession) reads every partition of its
// session, in the session's order (answered partitions move to its back),
// and its answer carries only the partitions with records, an error, or
// bounds other than last answered. A session wider than one Queen call is
// read through the long polls it keeps parked at Queen between fetches
// (fetch_watched.go, package fetchwatch), one narrower is read here. The
// session protocol's refusals are the top-level error_code, answered alone.
// Versions: see its row in versions.go.
//
// Memory: a chunk's Queen answer is turned into its partitions' batches as
// it arrives and dropped, so one fetch holds at most one answer (bounded by
// the queen client) and the response. No entry asks Queen for more than the
// response has left (fetchFill.ask), and once that is spent no further chunk
// is asked: its partitions are empty reads with unknown (-1) watermarks, as
// Kafka answers a partition past the response budget with nothing.
const (
	// fetchMemory bounds the record batches of fetch responses built and
	// not yet written, across the node's connections: eight full 32 MiB
	// responses. Past it a response takes no further partition's records
	// (as past its own budget), except the first record of a response,
	// so that every consumer makes progress however many read at once.
	fetchMemory      = 256 << 20
	maxFetchResponse = 32 << 20
	// minChunkWait is the shortest long-poll slice a chunked fetch gives one
	// chunk, so that more than 1,024 partitions still wait rather than spin.
	minChunkWait = 100 * time.Millisecond
)

// fetchSlot is one partition of a fetch request on its way through.
type fetchSlot struct {
	resp    *kmsg.FetchResponseTopicPartition
	max     int   // partition_max_bytes
	taken   int   // records in resp.RecordBatches
	charged int   // bytes of resp.RecordBatches paid on the node's fetchMem
	codec   int   // its batch's compression (recordbatch.Codec*)
	offset  int64 // fetch_offset
	next    int64 // the offset after the last record taken (offset when none)
}

func (n *Node) handleFetch(ctx context.Context, c *transport.Conn, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	fs := n.sessions.Begin(fetchSessionRequest(c, req))
	if fs.Error != 0 {
		resp.ErrorCode = fs.Error
		return resp, nil
	}
	resp.SessionID = fs.ID
	wait := time.Duration(min(max(req.MaxWaitMillis, 0), queen.MaxFetchWaitMs)) * time.Millisecond
	if round := n.watchRound(c, fs, wait); round != nil {
		defer round.End()
		return n.fetchWatched(ctx, c, req, resp, fs, round, wait)
	}
	if fs.Kind == fetchsession.Sessionless {
		// A watched fetch's Assign proved its partitions distinct; one
		// read the plain way reads each once, however often it is named.
		fs.Partitions = fetchsession.Distinct(fs.Partitions)
	}
	var (
		slots   []fetchSlot        // the partitions Queen is asked about...
		entries []queen.FetchEntry // ...and their entries, one for one
		refused bool               // a partition already carries an error
	)
	answers := layoutFetch(resp, fs.Partitions)
	topics := n.cats.Verdicts(callerOf(c), faults.Fetch, &resp.ThrottleMillis)
	for i := range fs.Partitions {
		rp := &fs.Partitions[i]
		sp := answers[i]
		unreadAnswer(sp, req)
		topic, tv, err := fetchTopic(ctx, topics, req.Version >= 13, rp.Key)
		if err != nil {
			return nil, err
		}
		if code, ok := topics.Refusal(ctx, topic, &tv, rp.Partition); ok {
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
		slots = append(slots, fetchSlot{resp: sp, max: max(int(rp.MaxBytes), 1), codec: tv.Config.FetchCodec(n.cfg.FetchCompression, req.Version), offset: rp.FetchOffset})
		entries = append(entries, queen.FetchEntry{
			Queue:     topic,
			Partition: strconv.FormatInt(int64(rp.Partition), 10),
			Offset:    rp.FetchOffset,
		})
	}
	if len(entries) == 0 {
		return answerFetch(resp, fs, answers), nil
	}
	if refused {
		// An error is an answer: like Kafka (and Queen's own long poll,
		// which returns at once on an erroring entry), do not park on it.
		wait = 0
	}
	f := n.newFetchFill(req)
	defer f.handOver(c)
	fctx, cancel := n.untilStop(ctx)
	err := f.chunked(fctx, c, slots, entries, wait, int(max(req.MinBytes, 0)))
	cancel()
	if err := n.failedRead(ctx, c, resp, f, slots, err); err != nil {
		return nil, err
	}
	return answerFetch(resp, fs, answers), nil
}

// newFetchFill is the fill of one response to req: the 32 MiB ceiling, or
// the request's max_bytes below it.
func (n *Node) newFetchFill(req *kmsg.FetchRequest) *fetchFill {
	f := &fetchFill{budget: maxFetchResponse, enc: n.batches, mem: n.fetchMem}
	if req.Version >= 3 && req.MaxBytes >= 0 {
		f.budget = min(f.budget, int(req.MaxBytes))
	}
	return f
}

// failedRead answers err, the failure of reading slots from Queen (nil when
// the read did not fail): each slot the mapped code with no records, the
// throttle raised; a fatal mapping, or a long poll cut by the node's stop,
// is returned to close the connection.
func (n *Node) failedRead(ctx context.Context, c *transport.Conn, resp *kmsg.FetchResponse, f *fetchFill, slots []fetchSlot, err error) error {
	if err == nil {
		return nil
	}
	if n.stopped() && ctx.Err() == nil {
		// A long poll cut by the stop: nothing was read, and a stopping
		// node's connection is closed, which the consumer retries elsewhere.
		return errStopping
	}
	faults.Log(c.Logger(), "fetch", err)
	code, throttle, _, fatal := faults.Fetch(err)
	if fatal != nil {
		return fatal
	}
	resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
	for i := range slots {
		f.unfill(&slots[i])
		slots[i].resp.ErrorCode = code // watermarks -1, no records
	}
	return nil
}

// unreadAnswer readies sp, a partition's answer to req, as not read yet:
// no records, no error, watermarks unknown.
func unreadAnswer(sp *kmsg.FetchResponseTopicPartition, req *kmsg.FetchRequest) {
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

// fetchSessionRequest is the session side of req; below v7, a sessionless
// fetch. From v13 topics are named by id, and so are the session's.
func fetchSessionRequest(c *transport.Conn, req *kmsg.FetchRequest) fetchsession.Request {
	r := fetchsession.Request{ID: 0, Epoch: fetchsession.FinalEpoch, UsesIDs: req.Version >= 13}
	if req.Version >= 7 {
		r.ID, r.Epoch = req.SessionID, req.SessionEpoch
	}
	if c != nil {
		r.Owner = c.Identity()
	}
	key := func(topic string, id [16]byte, p int32) fetchsession.Key {
		if r.UsesIDs {
			return fetchsession.Key{ID: id, Partition: p}
		}
		return fetchsession.Key{Topic: topic, Partition: p}
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			r.Partitions = append(r.Partitions, fetchsession.Partition{
				Key:         key(rt.Topic, rt.TopicID, rp.Partition),
				FetchOffset: rp.FetchOffset,
				MaxBytes:    rp.PartitionMaxBytes,
			})
		}
	}
	for i := range req.ForgottenTopics {
		ft := &req.ForgottenTopics[i]
		for _, p := range ft.Partitions {
			r.Forgotten = append(r.Forgotten, key(ft.Topic, ft.TopicID, p))
		}
	}
	return r
}

// fetchTopic is the name and verdict of the topic k names: by id from
// v13, resolved on every fetch (a session holds the id, so a topic deleted
// and recreated under the same name is UNKNOWN_TOPIC_ID to it, as the id
// it holds is gone, and the client learns the new one from Metadata).
func fetchTopic(ctx context.Context, topics *catalogue.Verdicts, byID bool, k fetchsession.Key) (string, catalogue.Verdict, error) {
	if byID {
		return topics.OfID(ctx, k.ID)
	}
	tv, err := topics.Of(ctx, k.Topic)
	return k.Topic, tv, err
}

// layoutFetch lays resp out for ps, a topic entry for each run of one
// topic's partitions (the request's own layout, for a request that names
// each topic once), and returns each partition's answer, for ps[i] the i-th.
func layoutFetch(resp *kmsg.FetchResponse, ps []fetchsession.Partition) []*kmsg.FetchResponseTopicPartition {
	resp.Topics = resp.Topics[:0]
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].Key.Topic == ps[i].Key.Topic && ps[j].Key.ID == ps[i].Key.ID {
			j++
		}
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = ps[i].Topic, ps[i].ID
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, j-i)
		for k := range st.Partitions {
			st.Partitions[k] = kmsg.NewFetchResponseTopicPartition()
			st.Partitions[k].Partition = ps[i+k].Partition
		}
		resp.Topics = append(resp.Topics, st)
		i = j
	}
	answers := make([]*kmsg.FetchResponseTopicPartition, 0, len(ps))
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			answers = append(answers, &resp.Topics[i].Partitions[j])
		}
	}
	return answers
}

// answerFetch reports what the fetch read to its session and, for an
// incremental fetch, leaves in resp only what the session says to carry.
// A partition without error and with unknown watermarks was not read (the
// response budget was spent, or Queen throttled the read).
func answerFetch(resp *kmsg.FetchResponse, fs *fetchsession.Fetch, answers []*kmsg.FetchResponseTopicPartition) *kmsg.FetchResponse {
	rs := make([]fetchsession.Result, len(answers))
	for i, a := range answers {
		rs[i] = fetchsession.Result{HighWatermark: a.HighWatermark, LogStartOffset: a.LogStartOffset, Error: a.ErrorCode,
			Records: len(a.RecordBatches) > 0, Unread: a.ErrorCode == 0 && a.HighWatermark < 0}
	}
	carry := fs.Answer(rs)
	if fs.Kind != fetchsession.Incremental {
		return resp
	}
	k := 0
	topics := resp.Topics[:0]
	for _, st := range resp.Topics {
		kept := st.Partitions[:0]
		for _, sp := range st.Partitions {
			if carry[k] {
				kept = append(kept, sp)
			}
			k++
		}
		if len(kept) > 0 {
			st.Partitions = kept
			topics = append(topics, st)
		}
	}
	resp.Topics = topics
	return resp
}

// fetchFill fills a fetch response's partitions from Queen's answers, in
// request order, against the partition budgets and the response budget.
// The first record of the response is always taken whole; after it a
// partition takes records while they fit, and one whose next record does
// not fit is an empty read with its real watermarks.
type fetchFill struct {
	enc    *recordbatch.Encoder
	mem    *budget.Budget // the node's fetch response bytes (fetchMemory); nil: unbounded
	held   int64          // what the response's batches hold of mem
	budget int            // bytes the response has left (negative past an oversized first record)
	taken  int            // records in the response
	full   bool           // a record did not fit what the response had left
}

// handOver gives what the response holds of the node's budget to c, which
// gives it back once the response is written (or the connection closes):
// the batches live until then. Without a connection it is given back now.
func (f *fetchFill) handOver(c *transport.Conn) {
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

// spent reports that the response takes no further chunk: its first record
// is in, and a record did not fit what is left (or nothing could). A later
// partition might still hold a record small enough, but Kafka may answer
// the partitions past the budget empty, and the consumer fetches again.
func (f *fetchFill) spent() bool {
	return f.taken > 0 && (f.full || f.budget <= recordbatch.HeaderLen)
}

// unfill takes a partition's answer back out of the response (before it
// is read again, or failed): no records, no error, watermarks unknown.
func (f *fetchFill) unfill(s *fetchSlot) {
	if s.charged > 0 {
		f.mem.Release(int64(s.charged))
		f.held -= int64(s.charged)
		s.charged = 0
	}
	f.budget += len(s.resp.RecordBatches)
	f.taken -= s.taken
	f.full = f.full && s.taken == 0 // what it held is free again
	s.taken, s.next = 0, s.offset
	s.resp.RecordBatches = []byte{}
	s.resp.ErrorCode = 0
	s.resp.HighWatermark, s.resp.LastStableOffset, s.resp.LogStartOffset = -1, -1, -1
}

// fill answers s from its Queen result r.
func (f *fetchFill) fill(s *fetchSlot, r *queen.FetchResult) {
	f.unfill(s)
	switch r.Error {
	case "":
	case queen.FetchErrUnknownTopic:
		// The queue is gone since the catalogue last looked: no bounds.
		s.resp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	case queen.FetchErrOutOfRange:
		s.resp.ErrorCode = kerr.OffsetOutOfRange.Code
		s.resp.HighWatermark, s.resp.LastStableOffset, s.resp.LogStartOffset = r.HighWatermark, r.HighWatermark, r.LogStartOffset
		return
	default:
		s.resp.ErrorCode = kerr.UnknownServerError.Code
		return
	}
	s.resp.HighWatermark, s.resp.LastStableOffset, s.resp.LogStartOffset = r.HighWatermark, r.HighWatermark, r.LogStartOffset
	var recs []recordbatch.Fetched
	size := recordbatch.HeaderLen
	for _, fr := range r.Records {
		rec := envelope.DecodePayload(fr.Payload, queen.ParseTS(fr.TS))
		if rec.Timestamp < 0 {
			rec.Timestamp = -1 // an unreadable ts is no timestamp, not year 1
		}
		est := recordBound(&rec)
		if f.taken+len(recs) > 0 && (size+est > s.max || size+est > f.budget) {
			f.full = f.full || size+est > f.budget
			break
		}
		recs = append(recs, recordbatch.Fetched{Offset: fr.Offset, Record: rec})
		size += est
	}
	if len(recs) > 0 {
		// Compressed or not, the batch is never larger than the plain one
		// the budgets above were counted against.
		b := f.enc.AppendFetchBatch(nil, recs, s.codec)
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
			b = f.enc.AppendFetchBatch(nil, recs, s.codec)
		}
		s.resp.RecordBatches = b
		f.budget -= len(s.resp.RecordBatches)
		f.taken += len(recs)
		s.taken = len(recs)
		s.next = recs[len(recs)-1].Offset + 1
	}
}

// charge pays n bytes of batches on the node's budget, if it has them.
func (f *fetchFill) charge(n int) bool {
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
func (f *fetchFill) ask(ss []*fetchSlot, es []queen.FetchEntry) {
	left := storedBytes(max(f.budget, 1))
	for i := range es {
		es[i].MaxBytes = min(storedBytes(ss[i].max), left, queen.MaxFetchEntryBytes)
	}
}

// storedBytes is the Queen budget for b bytes of Kafka records: a little
// more, since Queen counts stored bytes and a stored envelope is base64,
// about four thirds of the record it re-encodes to. The Kafka budget is
// applied exactly afterwards (fill).
func storedBytes(b int) int {
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

// chunked runs entries through Queen's fetch route, at most 1,024 per call,
// filling slots as each answer arrives. Up to 1,024 it is one call carrying
// the whole long poll. Beyond, a first pass reads every chunk without
// waiting; when that gathered less than minBytes, the remaining wait is
// spent in slices, one chunk after another, until a chunk has data or the
// wait is over. No chunk is asked once the response budget is spent. A
// chunk Queen refuses as a bad or too large request fails its own
// partitions only; any other failure is the whole fetch's, returned.
func (f *fetchFill) chunked(ctx context.Context, c *transport.Conn, slots []fetchSlot, entries []queen.FetchEntry, wait time.Duration, minBytes int) error {
	chunks := (len(entries) + queen.MaxFetchEntries - 1) / queen.MaxFetchEntries
	deadline := time.Now().Add(wait)
	for round := 0; ; round++ {
		got, answered := 0, false
		for from := 0; from < len(entries); from += queen.MaxFetchEntries {
			if f.spent() {
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
			ss := make([]*fetchSlot, to-from)
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
func (f *fetchFill) readChunk(ctx context.Context, c *transport.Conn, ss []*fetchSlot, es []queen.FetchEntry, waitMs, minBytes int) (got int, answered bool, err error) {
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
			s.resp.ErrorCode = code
		}
		return 0, true, nil
	}
	for i := range rs {
		for _, rec := range rs[i].Records {
			got += max(len(rec.Payload), 1)
		}
		answered = answered || rs[i].Error != ""
		f.fill(ss[i], &rs[i])
	}
	return got, answered, nil
}
