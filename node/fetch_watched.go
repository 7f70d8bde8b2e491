package node

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/fetchread"
	"github.com/queen-mq/queen-kafka/fetchsession"
	"github.com/queen-mq/queen-kafka/fetchwatch"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/transport"
)

// The watched fetch: an incremental fetch of a session wider than one Queen
// call (1,024 partitions) that may wait. Its partitions stay watched
// between fetches by the long polls package fetchwatch keeps parked at
// Queen, so the fetch reads at once only what the watch does not know (new
// partitions, those it just answered records of, those the client moved),
// takes what the parked calls read, and otherwise waits on them: a trickle
// costs one parked call per record, not a call per 1,024 partitions per
// fetch. The budgets (package fetchread), the answer and the session's
// carry rules are the plain fetch's (fetch.go); only the partitions the
// fetch touched are laid out, so its cost follows what moved rather than
// the session's width.
//
// A sessionless fetch as wide (epoch -1, or below v7: librdkafka's, and any
// client without KIP-227) is watched the same way, its watch kept with the
// connection, which names every partition in every fetch: the partitions
// get a session's slots by key (fetchwatch.Round.Assign), and since its
// answer carries every partition, a quiet one is answered its high
// watermark from the watch (the offset its parked call waits at: no write
// has landed there, or the call would have answered) and its log start
// offset as last read.

// watchRound is the watch round of fetch fs, nil when fs is not watched: a
// full fetch (opening a session), not wider than one call, not waiting, or
// its watch busy with another fetch. An incremental fetch's watch is kept
// with its session (and closed with it), a sessionless fetch's with its
// connection (closed with it); one parked through another credential is
// replaced.
func (n *Node) watchRound(c *transport.Conn, fs *fetchsession.Fetch, wait time.Duration) *fetchwatch.Round {
	if fs.Kind == fetchsession.Full || len(fs.Partitions) <= queen.MaxFetchEntries || wait <= 0 || c == nil {
		return nil
	}
	q := c.Queen()
	var w *fetchwatch.Watch
	if fs.Kind == fetchsession.Sessionless {
		w = stateOf(c).fetchWatch.Load()
	} else {
		w, _ = fs.Attachment().(*fetchwatch.Watch)
	}
	if w == nil || w.Reader() != fetchwatch.Reader(q) {
		w = fetchwatch.New(n.stopping, q, fetchwatch.Config{Calls: n.parked, Owner: c.Identity()})
		if fs.Kind == fetchsession.Sessionless {
			keepFetchWatch(c, w)
		} else {
			fs.Attach(w)
		}
	}
	r := w.Begin()
	if r != nil && fs.Kind == fetchsession.Sessionless && !r.Assign(fs.Partitions) {
		r.End() // a partition named twice: read the plain way
		return nil
	}
	return r
}

// watchedFetch is one watched fetch on its way through.
type watchedFetch struct {
	*fetchread.Watched
	n      *Node
	req    *kmsg.FetchRequest
	fs     *fetchsession.Fetch
	topics *catalogue.Verdicts
	queues []string // by partition, its queue; "" where the fetch does not read it
}

func (n *Node) fetchWatched(ctx context.Context, c *transport.Conn, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, fs *fetchsession.Fetch, round *fetchwatch.Round, wait time.Duration) (kmsg.Response, error) {
	deadline := time.Now().Add(wait)
	wf := &watchedFetch{n: n, req: req, fs: fs, Watched: fetchread.NewWatched(fetchread.New(req, n.batches, n.fetchMem), round),
		topics: n.cats.Verdicts(callerOf(c), faults.Fetch, &resp.ThrottleMillis)}
	defer wf.Fill.HandOver(reader(c))
	failedRead := func(slots []fetchread.Slot, err error) error { return n.failedRead(ctx, c, resp, wf.Fill, slots, err) }
	// The verdicts first, then the watch's view of every partition the
	// fetch may read, under one lock: a wide session is matched whole on
	// every fetch.
	queues := round.Queues(len(fs.Partitions))
	wf.queues = queues
	var (
		topic string
		tv    catalogue.Verdict
		last  *fetchsession.Partition // whose topic topic and tv are
	)
	for i := range fs.Partitions {
		rp := &fs.Partitions[i]
		queues[i] = ""
		if last == nil || rp.Topic != last.Topic || rp.ID != last.ID {
			// A session lists a topic's partitions together: one verdict
			// lookup per run of them, not per partition.
			var err error
			if topic, tv, err = fetchTopic(ctx, wf.topics, req.Version >= 13, rp.Key); err != nil {
				return nil, err
			}
			last = rp
		}
		if code, ok := wf.topics.Refusal(ctx, topic, &tv, rp.Partition); ok {
			if code != 0 {
				wf.refuse(i, code)
			}
			continue
		}
		if rp.FetchOffset < 0 {
			wf.refuse(i, kerr.OffsetOutOfRange.Code) // Queen refuses a negative offset for the whole call
			continue
		}
		queues[i] = topic
	}
	var ready, hot []*fetchread.Part
	var hotEntries []queen.FetchEntry
	var results []*queen.FetchResult
	var readyEntries []queen.FetchEntry
	for _, m := range round.MatchAll(fs.Partitions, queues) {
		tp, err := wf.touchRead(ctx, m.Idx)
		if err != nil {
			return nil, err
		}
		switch m.State {
		case fetchwatch.Ready:
			ready = append(ready, tp)
			results = append(results, m.Result)
			readyEntries = append(readyEntries, m.Entry)
		case fetchwatch.Read:
			hot = append(hot, tp)
			hotEntries = append(hotEntries, m.Entry)
		}
	}
	minBytes := int(max(req.MinBytes, 0))
	fctx, cancel := n.untilStop(ctx)
	defer cancel()

	// What the parked calls read, then what the watch does not know.
	for j, tp := range ready {
		wf.Take(fctx, reader(c), tp, readyEntries[j], results[j])
	}
	if len(hot) > 0 && !wf.Fill.Spent() {
		if err := wf.ReadParts(fctx, reader(c), hot, hotEntries, 0, minBytes, failedRead); err != nil {
			return nil, err
		}
	}
	wf.Learn()

	// Then wait on the parked calls until there is enough to answer.
	for !wf.Refused && !wf.Fill.Spent() && wf.Gathered() < max(minBytes, 1) && time.Now().Before(deadline) {
		if !round.Park() {
			// The node's bound on parked calls refused one: the partitions
			// left unwatched are waited on the plain way, in slices.
			return wf.answer(resp, wf.waitUnparked(fctx, c, deadline, minBytes, failedRead))
		}
		hits, failed := round.Wait(fctx, deadline)
		if len(hits) == 0 {
			if failed || !time.Now().Before(deadline) || fctx.Err() != nil {
				break
			}
			// Nothing is parked (nothing was cold): read the rest plainly.
			return wf.answer(resp, wf.waitUnparked(fctx, c, deadline, minBytes, failedRead))
		}
		for _, h := range hits {
			tp, err := wf.touchRead(ctx, h.Idx)
			if err != nil {
				return nil, err
			}
			wf.Take(fctx, reader(c), tp, h.Entry, h.Result)
		}
		wf.Learn()
	}
	if n.stopped() && ctx.Err() == nil && wf.Gathered() == 0 {
		return nil, transport.ErrStopping
	}
	round.Park() // what is cold now stays watched until the next fetch
	return wf.answer(resp, nil)
}

// touch is the idx-th partition's entry among those the fetch answers,
// made (unread) on first touch.
func (wf *watchedFetch) touch(idx int, tv *catalogue.Verdict) *fetchread.Part {
	if tp := wf.Touched[idx]; tp != nil {
		return tp
	}
	rp := &wf.fs.Partitions[idx]
	tp := &fetchread.Part{Idx: idx, Key: *rp}
	tp.Slot = fetchread.Slot{Resp: &kmsg.FetchResponseTopicPartition{}, Max: max(int(rp.MaxBytes), 1), Offset: rp.FetchOffset, Next: rp.FetchOffset}
	*tp.Slot.Resp = kmsg.NewFetchResponseTopicPartition()
	tp.Slot.Resp.Partition = rp.Partition
	fetchread.Unread(tp.Slot.Resp, wf.req)
	if tv != nil {
		tp.Slot.Codec = tv.Config.FetchCodec(wf.n.cfg.FetchCompression, wf.req.Version)
		tp.Slot.Batch = int(tv.Config.MaxMessageBytes())
	}
	wf.Touched[idx] = tp
	return tp
}

// touchRead is touch for a partition the fetch reads, whose topic's verdict
// (and so its codec) this request has already taken.
func (wf *watchedFetch) touchRead(ctx context.Context, idx int) (*fetchread.Part, error) {
	if tp := wf.Touched[idx]; tp != nil {
		return tp, nil
	}
	_, tv, err := fetchTopic(ctx, wf.topics, wf.req.Version >= 13, wf.fs.Partitions[idx].Key)
	if err != nil {
		return nil, err
	}
	return wf.touch(idx, &tv), nil
}

// refuse answers the idx-th partition code, unread.
func (wf *watchedFetch) refuse(idx int, code int16) {
	tp := wf.touch(idx, nil)
	tp.Slot.Resp.ErrorCode = code
	wf.Refused = true
}

// waitUnparked waits the plain way (fetchread.Fill.Read, in slices) on the
// cold partitions no call is parked on, and returns the read's failure.
func (wf *watchedFetch) waitUnparked(ctx context.Context, c *transport.Conn, deadline time.Time, minBytes int, failed func([]fetchread.Slot, error) error) error {
	rest := wf.Round.Unparked()
	if len(rest) == 0 {
		return nil
	}
	tps := make([]*fetchread.Part, len(rest))
	entries := make([]queen.FetchEntry, len(rest))
	for j, h := range rest {
		tp, err := wf.touchRead(ctx, h.Idx)
		if err != nil {
			return err
		}
		tps[j], entries[j] = tp, h.Entry
	}
	if err := wf.ReadParts(ctx, reader(c), tps, entries, time.Until(deadline), minBytes, failed); err != nil {
		return err
	}
	wf.Learn()
	return nil
}

// answer lays out the touched partitions the session carries, in the
// fetch's order (every partition of a sessionless fetch), or returns err.
func (wf *watchedFetch) answer(resp *kmsg.FetchResponse, err error) (kmsg.Response, error) {
	if err != nil {
		return nil, err
	}
	if wf.fs.Kind == fetchsession.Sessionless {
		return wf.answerAll(resp), nil
	}
	tps := make([]*fetchread.Part, 0, len(wf.Touched))
	for _, tp := range wf.Touched {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b *fetchread.Part) int { return a.Idx - b.Idx })
	idx := make([]int, len(tps))
	rs := make([]fetchsession.Result, len(tps))
	for j, tp := range tps {
		a := tp.Slot.Resp
		idx[j] = tp.Idx
		rs[j] = fetchsession.Result{HighWatermark: a.HighWatermark, LogStartOffset: a.LogStartOffset, Error: a.ErrorCode,
			Records: len(a.RecordBatches) > 0, Unread: a.ErrorCode == 0 && a.HighWatermark < 0}
	}
	carry := wf.fs.AnswerSome(idx, rs)
	resp.Topics = resp.Topics[:0]
	for j, tp := range tps {
		if !carry[j] {
			continue
		}
		k := tp.Key
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != k.Topic || resp.Topics[n-1].TopicID != k.ID {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = k.Topic, k.ID
			resp.Topics = append(resp.Topics, st)
		}
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, *tp.Slot.Resp)
	}
	return resp, nil
}

// answerAll answers every partition of a sessionless fetch: those it
// touched as it read them; a quiet one (watched, nothing new) its high
// watermark from the watch, the offset its parked call waits at, and its
// log start offset as last read; one refused without a code (a bare
// throttle) unread.
func (wf *watchedFetch) answerAll(resp *kmsg.FetchResponse) *kmsg.FetchResponse {
	ps := wf.fs.Partitions
	answers := layoutFetch(resp, ps)
	lsos := wf.Round.LogStarts(ps, wf.queues)
	for i, sp := range answers {
		if tp := wf.Touched[i]; tp != nil {
			p := sp.Partition
			*sp = *tp.Slot.Resp
			sp.Partition = p
			continue
		}
		fetchread.Unread(sp, wf.req)
		if wf.queues[i] != "" && lsos[i] >= 0 {
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = ps[i].FetchOffset, ps[i].FetchOffset, lsos[i]
		}
	}
	return answerFetch(resp, wf.fs, answers)
}
