package sharefetch

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/fetchread"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/sharepartition"
	"github.com/queen-mq/queen-kafka/sharesession"
)

// fetchVersion is the Fetch version whose codecs a share fetch answer may
// use (ShareFetch came after every codec).
const fetchVersion = 17

const (
	// pollSlice bounds one Queen long poll of a waiting share fetch: a lock
	// expiring meanwhile (which Queen does not see) is noticed within it.
	pollSlice = time.Second
	// lockedWait is the pause of a share fetch that has nothing to read
	// until a lock ends (records held by others, the window full).
	lockedWait = 100 * time.Millisecond
)

// part is one share-partition of a request on its way through.
type part struct {
	sp       sharesession.Partition
	resp     *kmsg.ShareFetchResponseTopicPartition
	topic    string
	e        *entry // nil: refused
	acks     []sharepartition.AckBatch
	pending  bool // acks not applied yet
	fetch    bool
	done     bool // answered with records or an error
	codec    int
	batch    int
	from     int64
	scratch  kmsg.FetchResponseTopicPartition
	refused  int   // acknowledgement batches refused
	ackCode  int16 // the acknowledgements' answer
	answered bool  // carries something an incremental answer must include
}

// request is one ShareFetch or ShareAcknowledge being served.
type request struct {
	s      *Server
	c      Conn
	kv     KV
	member string
	cfg    sharepartition.Config
	reset  sharepartition.Reset
	parts  []*part
	// batchSize cuts the answer's acquired ranges (ShareFetch's batch_size; 0: uncut).
	batchSize int
}

// Fetch serves a ShareFetch into resp. An error is fatal to the
// connection (a catalogue read that must close it).
func (s *Server) Fetch(ctx context.Context, c Conn, topics Topics, req *kmsg.ShareFetchRequest, resp *kmsg.ShareFetchResponse) error {
	group, member := deref(req.GroupID), deref(req.MemberID)
	if code := s.checkIDs(group, member); code != 0 {
		resp.ErrorCode = code
		return nil
	}
	kv := c.Queen()
	epoch := req.ShareSessionEpoch
	if epoch != sharesession.FinalEpoch {
		if code := s.member(ctx, kv, group, member); code != 0 {
			resp.ErrorCode = code
			return nil
		}
	}
	cfg, reset, err := s.cfg.Configs.Share(ctx, kv, group)
	if err != nil {
		resp.ErrorCode = codeOf(err)
		return nil
	}
	resp.AcquisitionLockTimeoutMillis = int32(cfg.LockDuration.Milliseconds())

	var add, forget []sharesession.Partition
	acks := map[sharesession.Partition][]sharepartition.AckBatch{}
	var acked []sharesession.Partition
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := sharesession.Partition{TopicID: rt.TopicID, Partition: rp.Partition}
			add = append(add, sp)
			if len(rp.AcknowledgementBatches) > 0 {
				if _, ok := acks[sp]; !ok {
					acked = append(acked, sp)
				}
				acks[sp] = append(acks[sp], fetchAcks(rp.AcknowledgementBatches)...)
			}
		}
	}
	for i := range req.ForgottenTopicsData {
		ft := &req.ForgottenTopicsData[i]
		for _, p := range ft.Partitions {
			forget = append(forget, sharesession.Partition{TopicID: ft.TopicID, Partition: p})
		}
	}
	key := sharesession.Key{Group: group, Member: member}
	fetch, code := s.sessions.Fetch(key, c.ID(), epoch, add, forget, len(acked) > 0)
	if code != 0 {
		resp.ErrorCode = code
		return nil
	}

	r := &request{s: s, c: c, kv: kv, member: member, cfg: cfg, reset: reset, batchSize: int(max(req.BatchSize, 0))}
	inFetch := make(map[sharesession.Partition]bool, len(fetch))
	for _, sp := range fetch {
		inFetch[sp] = true
	}
	order := append([]sharesession.Partition(nil), fetch...)
	for _, sp := range acked {
		if !inFetch[sp] {
			order = append(order, sp)
		}
	}
	layoutFetch(resp, order)
	k := 0
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			sp := order[k]
			k++
			a := acks[sp]
			pt := &part{sp: sp, resp: &resp.Topics[i].Partitions[j], acks: a, pending: len(a) > 0, fetch: inFetch[sp]}
			if renews(a) && !req.IsRenewAck {
				pt.refuseAcks(kerr.InvalidRequest.Code)
			}
			r.parts = append(r.parts, pt)
		}
	}
	if err := r.resolve(ctx, group, topics, func(p *part, code int16) {
		p.resp.ErrorCode = code
		if p.pending {
			p.refuseAcks(code)
		}
	}); err != nil {
		return err
	}

	if epoch != sharesession.FinalEpoch && !req.IsRenewAck {
		// A renewing fetch (KIP-1222) only acknowledges.
		if err := r.read(ctx, req, resp); err != nil {
			return err
		}
	}
	for _, p := range r.parts {
		if p.pending {
			p.applyAcks(ctx, r)
			p.resp.AcknowledgeErrorCode = p.ackCode
		}
		if p.e != nil {
			s.observe(p.e, p.refused)
		}
	}
	if epoch == sharesession.FinalEpoch {
		s.release(ctx, c, key, s.sessions.Close(key))
	}
	if epoch > sharesession.InitialEpoch {
		// An incremental answer carries only partitions with something to say.
		trimFetch(resp, r.parts)
	}
	return nil
}

// checkIDs refuses a request without a group or member id.
func (s *Server) checkIDs(group, member string) int16 {
	switch {
	case group == "":
		return kerr.InvalidGroupID.Code
	case member == "":
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// resolve names every part's topic, refuses what may not be read (refuse
// is told the code), and takes the others' handles.
func (r *request) resolve(ctx context.Context, group string, topics Topics, refuse func(*part, int16)) error {
	for _, p := range r.parts {
		name, tv, err := topics.OfID(ctx, p.sp.TopicID)
		if err != nil {
			return err
		}
		if code, refused := topics.Refusal(ctx, name, &tv, p.sp.Partition); refused {
			if code == 0 { // a bare throttle: nothing read, no error
				continue
			}
			refuse(p, code)
			p.done = true
			continue
		}
		r.s.learn(p.sp.TopicID, name)
		p.topic = name
		p.codec = tv.Config.FetchCodec(r.s.cfg.Compression, fetchVersion)
		p.batch = int(tv.Config.MaxMessageBytes())
		p.e = r.s.entry(r.c.Queen(), group, name, p.sp.Partition, r.cfg, r.reset)
	}
	return nil
}

// read acquires records for the fetch's partitions: a first pass without
// waiting (which carries each partition's acknowledgements in the same
// write as its acquisition), then, while nothing is acquired and the wait
// lasts, Queen's long poll on the partitions waiting for new records, or a
// short pause while only locks stand in the way.
func (r *request) read(ctx context.Context, req *kmsg.ShareFetchRequest, resp *kmsg.ShareFetchResponse) error {
	s := r.s
	wait := time.Duration(min(max(req.MaxWaitMillis, 0), queen.MaxFetchWaitMs)) * time.Millisecond
	// The wait runs on the wall clock; locks on the node's (Config.Now).
	deadline := time.Now().Add(wait)
	left := int(req.MaxRecords)
	if left <= 0 {
		left = math.MaxInt32
	}
	minBytes := max(int(req.MinBytes), 1)
	f := fetchread.New(&kmsg.FetchRequest{Version: fetchVersion, MaxBytes: req.MaxBytes}, s.cfg.Enc, s.cfg.Mem)
	defer f.HandOver(r.c)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.cfg.Stopping, cancel)
	defer stop()
	got := 0
	for round := 0; ; round++ {
		var slots []fetchread.Slot
		var entries []queen.FetchEntry
		var reading []*part
		now := s.cfg.Now()
		for _, p := range r.parts {
			if !p.fetch || p.done || p.e == nil {
				continue
			}
			var can bool
			err := p.e.h.View(ctx, r.kv, func(sp *sharepartition.Partition) {
				p.from, can = sp.NextFetchOffset(now), sp.CanAcquire(now)
			})
			if err != nil {
				p.fail(codeOf(err))
				continue
			}
			if !can {
				continue
			}
			p.scratch = kmsg.NewFetchResponseTopicPartition()
			fetchread.Unread(&p.scratch, &kmsg.FetchRequest{})
			reading = append(reading, p)
			slots = append(slots, fetchread.Slot{Resp: &p.scratch, Max: fetchread.MaxResponse, Codec: p.codec, Offset: p.from, Batch: p.batch})
			entries = append(entries, queen.FetchEntry{Queue: p.topic, Partition: strconv.FormatInt(int64(p.sp.Partition), 10), Offset: p.from})
		}
		pollWait := time.Duration(0)
		if round > 0 {
			pollWait = min(time.Until(deadline), pollSlice)
			pollWait = max(pollWait, 0)
		}
		if len(entries) > 0 {
			err := f.Read(wctx, r.c, slots, entries, pollWait, minBytes)
			if err != nil {
				if wctx.Err() != nil && round > 0 {
					return nil // the wait was cut: answer what there is
				}
				code, throttle, _, fatal := faults.Fetch(err)
				if fatal != nil {
					return fatal
				}
				faults.Log(r.c.Logger(), "share fetch", err)
				resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
				f.Fail(slots, code)
			}
			before, read := got, false
			for i, p := range reading {
				read = read || len(slots[i].Resp.RecordBatches) > 0
				got += p.take(ctx, r, f, slots[i:i+1], &left)
			}
			if read && got == before && round > 0 && !r.pause(wctx, deadline) {
				return nil // records there, none acquirable: not a spin
			}
		} else if round > 0 && time.Now().Before(deadline) && r.anyFetch() && !r.pause(wctx, deadline) {
			return nil
		}
		if round == 0 {
			// Every acknowledgement lands before the fetch waits.
			for _, p := range r.parts {
				if p.pending {
					p.applyAcks(ctx, r)
				}
			}
		}
		if got >= minBytes || left <= 0 || f.Spent() || !r.anyFetch() || !time.Now().Before(deadline) || wctx.Err() != nil {
			return nil
		}
	}
}

// pause waits a little while only locks stand in the way (or until the
// deadline, or the wait is cut: false).
func (r *request) pause(ctx context.Context, deadline time.Time) bool {
	t := time.NewTimer(min(time.Until(deadline), lockedWait))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// anyFetch reports a partition still to be read.
func (r *request) anyFetch() bool {
	for _, p := range r.parts {
		if p.fetch && !p.done && p.e != nil {
			return true
		}
	}
	return false
}

func (p *part) fail(code int16) {
	p.resp.ErrorCode = code
	p.done = code != 0
}

// take acquires what slot read for p (with p's pending acknowledgements in
// the same write), moves the batch into p's answer when anything was
// acquired, and returns the bytes taken.
func (p *part) take(ctx context.Context, r *request, f *fetchread.Fill, one []fetchread.Slot, left *int) int {
	slot := &one[0]
	rs := slot.Resp
	switch rs.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		// The log starts past the next fetch offset (retention): what
		// lies below it is archived, and the next pass reads from there.
		if rs.LogStartOffset > p.from {
			ls, now := rs.LogStartOffset, r.s.cfg.Now()
			if err := p.e.h.Update(ctx, r.kv, func(sp *sharepartition.Partition) error {
				sp.AdvanceLogStart(ls, now)
				return nil
			}); err != nil {
				p.fail(codeOf(err))
			}
		}
		f.Fail(one, 0)
		return 0
	default:
		p.fail(rs.ErrorCode)
		return 0
	}
	if len(rs.RecordBatches) < 8 {
		return 0
	}
	first := int64(binary.BigEndian.Uint64(rs.RecordBatches))
	var acks []sharepartition.AckBatch
	if p.pending {
		acks = p.acks
	}
	acquired, ackErr, err := p.e.h.Fetch(ctx, r.kv, r.member, acks, p.from, first, slot.Next-1, *left, r.s.cfg.Now())
	if p.pending && err == nil {
		p.pending = false
		p.setAck(ackErr)
	}
	if err != nil || len(acquired) == 0 {
		f.Fail(one, 0)
		if err != nil {
			p.fail(codeOf(err))
		}
		return 0
	}
	p.resp.Records = rs.RecordBatches
	n := 0
	for _, a := range acquired {
		n += int(a.Last - a.First + 1)
		p.resp.AcquiredRecords = appendAcquired(p.resp.AcquiredRecords, a, r.batchSize)
	}
	*left -= n
	p.done, p.answered = true, true
	return len(rs.RecordBatches)
}
