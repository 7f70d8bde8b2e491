package node

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
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
// fetch. The budgets, the answer and the session's carry rules are the
// plain fetch's (fetch.go); only the partitions the fetch touched are laid
// out, so its cost follows what moved rather than the session's width.
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

// touchedPart is a partition a watched fetch answers (or may): its place
// in the fetch, its key, and its slot.
type touchedPart struct {
	idx     int
	key     fetchsession.Partition
	slot    fetchSlot
	read    bool // the slot was filled from Queen, not left unread
	learned bool // the watch has been told of this fill
}

// watchedFetch is one watched fetch on its way through.
type watchedFetch struct {
	n       *Node
	req     *kmsg.FetchRequest
	fs      *fetchsession.Fetch
	topics  *catalogue.Verdicts
	round   *fetchwatch.Round
	f       *fetchFill
	touched map[int]*touchedPart
	queues  []string // by partition, its queue; "" where the fetch does not read it
	refused bool     // a partition carries an error: answer at once
}

func (n *Node) fetchWatched(ctx context.Context, c *transport.Conn, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, fs *fetchsession.Fetch, round *fetchwatch.Round, wait time.Duration) (kmsg.Response, error) {
	deadline := time.Now().Add(wait)
	wf := &watchedFetch{n: n, req: req, fs: fs, round: round, f: n.newFetchFill(req),
		topics: n.cats.Verdicts(callerOf(c), faults.Fetch, &resp.ThrottleMillis), touched: make(map[int]*touchedPart)}
	defer wf.f.handOver(c)
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
	var ready, hot []*touchedPart
	var hotEntries []queen.FetchEntry
	var results []*queen.FetchResult
	for _, m := range round.MatchAll(fs.Partitions, queues) {
		tp, err := wf.touchRead(ctx, m.Idx)
		if err != nil {
			return nil, err
		}
		switch m.State {
		case fetchwatch.Ready:
			ready = append(ready, tp)
			results = append(results, m.Result)
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
		wf.fill(tp, results[j])
	}
	if len(hot) > 0 && !wf.f.spent() {
		slots := make([]fetchSlot, len(hot))
		for j, tp := range hot {
			slots[j] = tp.slot
		}
		err := wf.f.chunked(fctx, c, slots, hotEntries, 0, minBytes)
		if err := n.failedRead(ctx, c, resp, wf.f, slots, err); err != nil {
			return nil, err
		}
		for j, tp := range hot {
			tp.slot, tp.read, tp.learned = slots[j], true, false
		}
		wf.refused = wf.refused || slices.ContainsFunc(slots, func(s fetchSlot) bool { return s.resp.ErrorCode != 0 })
	}
	wf.learn()

	// Then wait on the parked calls until there is enough to answer.
	for !wf.refused && !wf.f.spent() && wf.gathered() < max(minBytes, 1) && time.Now().Before(deadline) {
		if !round.Park() {
			// The node's bound on parked calls refused one: the partitions
			// left unwatched are waited on the plain way, in slices.
			return wf.answer(resp, wf.waitUnparked(fctx, c, resp, deadline, minBytes))
		}
		hits, failed := round.Wait(fctx, deadline)
		if len(hits) == 0 {
			if failed || !time.Now().Before(deadline) || fctx.Err() != nil {
				break
			}
			// Nothing is parked (nothing was cold): read the rest plainly.
			return wf.answer(resp, wf.waitUnparked(fctx, c, resp, deadline, minBytes))
		}
		for _, h := range hits {
			tp, err := wf.touchRead(ctx, h.Idx)
			if err != nil {
				return nil, err
			}
			wf.fill(tp, h.Result)
		}
		wf.learn()
	}
	if n.stopped() && ctx.Err() == nil && wf.gathered() == 0 {
		return nil, errStopping
	}
	round.Park() // what is cold now stays watched until the next fetch
	return wf.answer(resp, nil)
}

// touch is the idx-th partition's entry among those the fetch answers,
// made (unread) on first touch.
func (wf *watchedFetch) touch(idx int, tv *catalogue.Verdict) *touchedPart {
	if tp := wf.touched[idx]; tp != nil {
		return tp
	}
	rp := &wf.fs.Partitions[idx]
	tp := &touchedPart{idx: idx, key: *rp}
	tp.slot = fetchSlot{resp: &kmsg.FetchResponseTopicPartition{}, max: max(int(rp.MaxBytes), 1), offset: rp.FetchOffset, next: rp.FetchOffset}
	*tp.slot.resp = kmsg.NewFetchResponseTopicPartition()
	tp.slot.resp.Partition = rp.Partition
	unreadAnswer(tp.slot.resp, wf.req)
	if tv != nil {
		tp.slot.codec = tv.Config.FetchCodec(wf.n.cfg.FetchCompression, wf.req.Version)
	}
	wf.touched[idx] = tp
	return tp
}

// touchRead is touch for a partition the fetch reads, whose topic's verdict
// (and so its codec) this request has already taken.
func (wf *watchedFetch) touchRead(ctx context.Context, idx int) (*touchedPart, error) {
	if tp := wf.touched[idx]; tp != nil {
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
	tp.slot.resp.ErrorCode = code
	wf.refused = true
}

// fill answers tp from r, what Queen read of it from the fetch's offset.
func (wf *watchedFetch) fill(tp *touchedPart, r *queen.FetchResult) {
	wf.f.fill(&tp.slot, r)
	tp.read, tp.learned = true, false
	wf.refused = wf.refused || tp.slot.resp.ErrorCode != 0
}

// learn tells the watch what the fetch answered of each partition it read:
// a partition answered up to its high watermark is cold there and parked;
// one answered an error, or not read at all, is read again.
func (wf *watchedFetch) learn() {
	for _, tp := range wf.touched {
		if !tp.read || tp.learned {
			continue
		}
		tp.learned = true
		sp := tp.slot.resp
		if sp.ErrorCode == 0 && sp.HighWatermark < 0 {
			continue // the budget was spent before it was read
		}
		wf.round.Learn(&tp.key, fetchwatch.Outcome{Next: tp.slot.next, HighWatermark: sp.HighWatermark, LogStartOffset: sp.LogStartOffset, Err: sp.ErrorCode != 0})
	}
}

// gathered is the record bytes the response holds (min_bytes' measure).
func (wf *watchedFetch) gathered() int {
	n := 0
	for _, tp := range wf.touched {
		n += len(tp.slot.resp.RecordBatches)
	}
	return n
}

// waitUnparked waits the plain way (fetchFill.chunked, in slices) on the
// cold partitions no call is parked on, and returns the read's failure.
func (wf *watchedFetch) waitUnparked(ctx context.Context, c *transport.Conn, resp *kmsg.FetchResponse, deadline time.Time, minBytes int) error {
	rest := wf.round.Unparked()
	if len(rest) == 0 {
		return nil
	}
	slots := make([]fetchSlot, len(rest))
	entries := make([]queen.FetchEntry, len(rest))
	idx := make([]int, len(rest))
	for j, h := range rest {
		tp, err := wf.touchRead(ctx, h.Idx)
		if err != nil {
			return err
		}
		slots[j], entries[j], idx[j] = tp.slot, h.Entry, h.Idx
	}
	err := wf.f.chunked(ctx, c, slots, entries, time.Until(deadline), minBytes)
	if err := wf.n.failedRead(ctx, c, resp, wf.f, slots, err); err != nil {
		return err
	}
	for j, k := range idx {
		tp := wf.touched[k]
		tp.slot, tp.read, tp.learned = slots[j], true, false
	}
	wf.learn()
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
	tps := make([]*touchedPart, 0, len(wf.touched))
	for _, tp := range wf.touched {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b *touchedPart) int { return a.idx - b.idx })
	idx := make([]int, len(tps))
	rs := make([]fetchsession.Result, len(tps))
	for j, tp := range tps {
		a := tp.slot.resp
		idx[j] = tp.idx
		rs[j] = fetchsession.Result{HighWatermark: a.HighWatermark, LogStartOffset: a.LogStartOffset, Error: a.ErrorCode,
			Records: len(a.RecordBatches) > 0, Unread: a.ErrorCode == 0 && a.HighWatermark < 0}
	}
	carry := wf.fs.AnswerSome(idx, rs)
	resp.Topics = resp.Topics[:0]
	for j, tp := range tps {
		if !carry[j] {
			continue
		}
		k := tp.key
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != k.Topic || resp.Topics[n-1].TopicID != k.ID {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = k.Topic, k.ID
			resp.Topics = append(resp.Topics, st)
		}
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, *tp.slot.resp)
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
	lsos := wf.round.LogStarts(ps, wf.queues)
	for i, sp := range answers {
		if tp := wf.touched[i]; tp != nil {
			p := sp.Partition
			*sp = *tp.slot.resp
			sp.Partition = p
			continue
		}
		unreadAnswer(sp, wf.req)
		if wf.queues[i] != "" && lsos[i] >= 0 {
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = ps[i].FetchOffset, ps[i].FetchOffset, lsos[i]
		}
	}
	return answerFetch(resp, wf.fs, answers)
}
