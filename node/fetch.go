package node

import (
	"context"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/fetchread"
	"github.com/queen-mq/queen-kafka/fetchsession"
	"github.com/queen-mq/queen-kafka/queen"
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
// response has left (fetchread.Fill), and once that is spent no further chunk
// is asked: its partitions are empty reads with unknown (-1) watermarks, as
// Kafka answers a partition past the response budget with nothing.
const (
	// fetchMemory bounds the record batches of fetch responses built and
	// not yet written, across the node's connections: eight full 32 MiB
	// responses. Past it a response takes no further partition's records
	// (as past its own budget), except the first record of a response,
	// so that every consumer makes progress however many read at once.
	fetchMemory = 256 << 20
)

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
		slots   []fetchread.Slot   // the partitions Queen is asked about...
		entries []queen.FetchEntry // ...and their entries, one for one
		refused bool               // a partition already carries an error
	)
	answers := layoutFetch(resp, fs.Partitions)
	topics := n.cats.Verdicts(callerOf(c), faults.Fetch, &resp.ThrottleMillis)
	for i := range fs.Partitions {
		rp := &fs.Partitions[i]
		sp := answers[i]
		fetchread.Unread(sp, req)
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
		slots = append(slots, fetchread.Slot{Resp: sp, Max: max(int(rp.MaxBytes), 1), Codec: tv.Config.FetchCodec(n.cfg.FetchCompression, req.Version), Offset: rp.FetchOffset, Batch: int(tv.Config.MaxMessageBytes())})
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
	f := fetchread.New(req, n.batches, n.fetchMem)
	defer f.HandOver(reader(c))
	fctx, cancel := n.untilStop(ctx)
	err := f.Read(fctx, reader(c), slots, entries, wait, int(max(req.MinBytes, 0)))
	cancel()
	if err := n.failedRead(ctx, c, resp, f, slots, err); err != nil {
		return nil, err
	}
	return answerFetch(resp, fs, answers), nil
}

// failedRead answers err, the failure of reading slots from Queen (nil when
// the read did not fail): each slot the mapped code with no records, the
// throttle raised; a fatal mapping, or a long poll cut by the node's stop,
// is returned to close the connection.
func (n *Node) failedRead(ctx context.Context, c *transport.Conn, resp *kmsg.FetchResponse, f *fetchread.Fill, slots []fetchread.Slot, err error) error {
	if err == nil {
		return nil
	}
	if n.stopped() && ctx.Err() == nil {
		// A long poll cut by the stop: nothing was read, and a stopping
		// node's connection is closed, which the consumer retries elsewhere.
		return transport.ErrStopping
	}
	faults.Log(c.Logger(), "fetch", err)
	code, throttle, _, fatal := faults.Fetch(err)
	if fatal != nil {
		return fatal
	}
	resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
	f.Fail(slots, code)
	return nil
}

// reader is c as a fetch reads through it; none without a connection.
func reader(c *transport.Conn) fetchread.Conn {
	if c == nil {
		return nil
	}
	return c
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
