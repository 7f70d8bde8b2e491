package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

// A Kafka producer keeps several produce requests in flight on one
// connection (five for an idempotent one), and the connection answers them
// one at a time. Those already read and waiting when one's turn comes are
// written as ONE push with it and then answered in order, each as if it had
// been pushed alone: one push keeps them in order, and a request costs the
// facade and Queen one round trip fewer.
const (
	// maxCoalesce is how many produce requests may share a push.
	maxCoalesce = 5
	// coalesceFrameBytes bounds the frames of a group: sharing a push pays
	// for small requests, whose round trips dominate; a large one is its
	// own push, answered without waiting for the ones behind it, so that
	// the producer can send the next while this one is stored.
	coalesceFrameBytes = 512 << 10
	// coalesceBodyBytes bounds the push body of a group of two or more
	// requests, far under Queen's body ceiling (QUEEN_MAX_BODY_BYTES, 64 MiB
	// by default), so that requests which fit alone never meet it together.
	coalesceBodyBytes = 16 << 20
	// itemOverhead is a push item's bytes around its payload, less the
	// topic name: {"queue":"","partition":"123","payload":},
	itemOverhead = 48
)

// decoding is every produce request's decoder pool and the decode budget
// they share across the process: a request may decompress a frame's worth
// and its records may cost a frame's worth once decoded, each record its
// queen.PushItem and that item's framing in the push body beyond its
// envelope.
var decoding = recordbatch.NewPool(recordbatch.Limits{
	Frame:        maxFrame,
	ItemOverhead: int(unsafe.Sizeof(queen.PushItem{})) + itemOverhead,
})

// groupReq is one request of a group on its way through.
type groupReq struct {
	req  *kmsg.ProduceRequest
	resp *kmsg.ProduceResponse
	live []*producePart // admitted, in request order
}

// produceGroup runs reqs, consecutive Produce requests of one connection,
// as one push and returns each request's response. It takes requests from
// the front while the push body stays under coalesceBodyBytes (the first
// always) and returns how many it took; the rest are left for another
// group. Every phase keeps request order, so the answers are the ones
// running the requests one after another gives:
//
//   - lay out and admit each request on its own (topics, partitions,
//     framing, checksums), then decode its batches into envelopes, with
//     its own decompression allowance;
//   - sequence the idempotent batches of the whole group under their
//     producers' locks against a projection of their windows, so that a
//     batch of request 2 follows request 1's batch of the same
//     producer-partition: a gap refuses only that batch and writes nothing
//     of it, a repeat of an earlier batch is answered with that batch's
//     offsets;
//   - push every batch kept (see pushGroup);
//   - settle in request order against the live windows, remembering each
//     written batch. A batch is answered as written only if it was, so a
//     batch behind one whose write failed is refused as it would have been
//     alone.
func (n *Node) produceGroup(ctx context.Context, c *Conn, reqs []*kmsg.ProduceRequest) ([]*kmsg.ProduceResponse, int, error) {
	// The group's decoded records are paid for on the process-wide budget
	// until its push is over.
	d := decoding.Get()
	chunk, ends := d.Buffer(), []int(nil)
	defer func() { d.Release(chunk) }() // the push is over before release

	var group []*groupReq
	body := 0
	for i, req := range reqs {
		r := &groupReq{req: req, resp: req.ResponseKind().(*kmsg.ProduceResponse)}
		parts := produceParts(req, r.resp)
		if req.TransactionID != nil {
			// Transactions are not offered yet; Apache Kafka answers a
			// transactional produce it will not authorize this way.
			for _, p := range parts {
				p.fail(kerr.TransactionalIDAuthorizationFailed.Code, "transactions are not supported by this facade")
			}
			group = append(group, r)
			continue
		}
		live, err := n.admitProduce(ctx, c, req.Version, r.resp, parts)
		if err != nil {
			return nil, 0, err
		}
		markChunk, markEnds := chunk, len(ends)
		var grown int
		var busy bool
		chunk, ends, grown, busy = encodeParts(d, live, chunk, ends)
		for busy && i == 0 {
			// The first request holds nothing else of the group: it gives
			// back its budget and its buffers, waits for room, and decodes
			// again. A request after it is left for a later group instead,
			// so that nothing waits while holding budget.
			chunk, ends = nil, nil
			if err := d.Restart(ctx); err != nil {
				return nil, 0, err
			}
			chunk, ends, grown, busy = encodeParts(d, live, chunk, ends)
		}
		if i > 0 && (busy || body+grown > coalesceBodyBytes) {
			chunk, ends = markChunk, ends[:markEnds]
			break
		}
		body += grown
		r.live = live
		group = append(group, r)
	}

	unlock := n.sequenceGroup(c.Identity(), group)
	defer unlock()
	if err := pushGroup(ctx, c, group, ends); err != nil {
		return nil, 0, err
	}
	n.settleGroup(group, n.now().UnixMilli())

	resps := make([]*kmsg.ProduceResponse, len(group))
	for i, r := range group {
		resps[i] = r.resp
		for _, p := range r.live {
			if p.write {
				r.resp.ThrottleMillis = max(r.resp.ThrottleMillis, p.outcome.throttle)
			}
		}
	}
	return resps, len(group), nil
}

// encodeParts decodes the batches of one request's live partitions into
// envelopes under one decompression allowance: each batch's envelopes
// (p.env, each ending at its entry of ends) follow the previous batch's in
// chunk while they fit, and start an array of their own when they do not,
// so that no batch's envelopes are ever copied to grow a shared buffer. A
// batch that does not decode keeps its fault, answered only if sequencing
// would have written it. grown estimates the push body bytes the request
// adds; chunk is returned as the array the next batch continues in. busy
// is the budget refusing to grow without waiting: the request's decode is
// abandoned and must be run again.
func encodeParts(d *recordbatch.Decoder, live []*producePart, chunk []byte, ends []int) ([]byte, []int, int, bool) {
	grown := 0
	d.StartRequest()
	for _, p := range live {
		from := len(ends)
		room := chunk[len(chunk):]
		env, next, f := d.Envelopes(&p.rb, p.topic, room, ends)
		ends = next
		if f.Busy() {
			return chunk, ends, grown, true
		}
		p.fault = f
		if f != nil {
			continue
		}
		if cap(env) == cap(room) {
			chunk = chunk[:len(chunk)+len(env)]
		} else {
			chunk = env // envelopes took an array of their own
		}
		p.env, p.items = env, [2]int{from, len(ends)}
		grown += len(env) + (len(ends)-from)*(itemOverhead+len(p.topic))
	}
	return chunk, ends, grown, false
}

// seqProjection is a group's view of its producers' epochs and windows as
// the group's batches so far would leave them; owners names the batch of
// the group in each ring slot (nil: remembered before the group).
type seqProjection struct {
	epochs  map[producerKey]int16
	windows map[windowKey]*projectedWindow
}

type projectedWindow struct {
	w      seqWindow
	owners [seqWindowBatches]*producePart
}

// sequenceGroup locks the producers of the group's idempotent batches and
// decides each batch, in order, against the projection: write it, refuse
// it (seqCode), or answer it as a repeat (of dupOf, or of a batch written
// before the group). The returned unlock releases the producers once the
// group is settled.
func (n *Node) sequenceGroup(scope string, group []*groupReq) func() {
	var pkeys []producerKey
	epochs := make(map[producerKey]int16)
	firstReq := make(map[producerKey]int)
	for ri, r := range group {
		for _, p := range r.live {
			if !p.idempotent() {
				continue
			}
			k := producerKey{scope: scope, pid: p.rb.ProducerID}
			pkeys = append(pkeys, k)
			// A producer is created at the epoch the first request naming
			// it carries (its last batch's, as that request alone would).
			if fr, ok := firstReq[k]; !ok || fr == ri {
				firstReq[k], epochs[k] = ri, p.rb.ProducerEpoch
			}
		}
	}
	unlock := func() {}
	var held map[producerKey]*producerState
	if len(pkeys) > 0 {
		held, unlock = n.idem.seq.lockProducers(pkeys, epochs)
	}
	proj := seqProjection{epochs: make(map[producerKey]int16), windows: make(map[windowKey]*projectedWindow)}
	for _, r := range group {
		for _, p := range r.live {
			if !p.idempotent() {
				p.write = p.fault == nil
				continue
			}
			pk := producerKey{scope: scope, pid: p.rb.ProducerID}
			p.key = windowKey{scope: scope, pid: p.rb.ProducerID, topic: p.topic, partition: p.resp.Partition}
			p.lastSeq = seqAdd(p.rb.FirstSequence, p.rb.NumRecords-1)
			pe, ok := proj.epochs[pk]
			if !ok {
				pe = held[pk].epoch
			}
			pw := proj.windows[p.key]
			if pw == nil {
				pw = &projectedWindow{w: seqWindow{key: p.key, epoch: -1}}
				if w := n.idem.seq.window(p.key, false); w != nil {
					pw.w = *w
				}
				proj.windows[p.key] = pw
			}
			epoch := p.rb.ProducerEpoch
			p.epochBefore = pe
			v, at := decideSeq(&pe, &pw.w, epoch, p.rb.FirstSequence, p.lastSeq)
			proj.epochs[pk] = pe
			switch {
			case v.code != 0:
				p.seqCode = v.code
			case v.dup:
				p.dup, p.dupBase = true, v.base
				p.dupOf = pw.owners[at] // nil: written before the group
			case p.fault != nil:
			default:
				p.write = true
				if pw.w.epoch != epoch {
					pw.owners = [seqWindowBatches]*producePart{}
				}
				pw.owners[pw.w.accept(epoch, seqBatch{first: p.rb.FirstSequence, last: p.lastSeq, base: -1})] = p
			}
		}
	}
	// A producer's epoch moves with every batch it checks, written or
	// not, and the same whatever the windows say: the projection's is the
	// one the group leaves.
	for pk, e := range proj.epochs {
		held[pk].epoch = e
	}
	return unlock
}

// pushGroup writes the envelopes of every batch to be written and records
// each batch's outcome. Queen keeps order within a partition and promises
// nothing across partitions, even inside one push (queen-api §5), so a
// group touching several partitions is written by up to maxPushShards
// concurrent pushes, each holding whole partitions: every batch of one
// partition, and so every chain of idempotent batches, stays in one push,
// in group order. One push at a time per connection left Queen idle while
// it decoded, and the facade idle while Queen stored. A canceled call is
// returned.
func pushGroup(ctx context.Context, c *Conn, group []*groupReq, ends []int) error {
	var written []*producePart
	count := 0
	for _, r := range group {
		for _, p := range r.live {
			if p.write {
				written = append(written, p)
				count += p.items[1] - p.items[0]
			}
		}
	}
	if count == 0 {
		return nil
	}
	shards := shardParts(written, count)
	if len(shards) == 1 {
		return pushShard(ctx, c, shards[0], ends)
	}
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i := 1; i < len(shards); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs[i] = fmt.Errorf("push panic: %v", r)
				}
			}()
			errs[i] = pushShard(ctx, c, shards[i], ends)
		}()
	}
	errs[0] = pushShard(ctx, c, shards[0], ends)
	wg.Wait()
	return errors.Join(errs...)
}

const (
	// maxPushShards bounds the concurrent pushes of one group.
	maxPushShards = 4
	// minShardItems keeps small groups in one push, where a second call
	// would cost more than it overlaps.
	minShardItems = 256
)

// shardParts splits written (in group order) into pushes holding whole
// partitions, balanced by item count, each in group order.
func shardParts(written []*producePart, count int) [][]*producePart {
	load := make(map[topicPartition]int)
	var keys []topicPartition
	for _, p := range written {
		k := topicPartition{p.topic, p.resp.Partition}
		if _, ok := load[k]; !ok {
			keys = append(keys, k)
		}
		load[k] += p.items[1] - p.items[0]
	}
	n := min(maxPushShards, len(keys), count/minShardItems)
	if n <= 1 {
		return [][]*producePart{written}
	}
	// Largest partitions first, each to the lightest push so far.
	slices.SortStableFunc(keys, func(a, b topicPartition) int { return cmp.Compare(load[b], load[a]) })
	sums := make([]int, n)
	shardOf := make(map[topicPartition]int, len(keys))
	for _, k := range keys {
		i := slices.Index(sums, slices.Min(sums))
		shardOf[k] = i
		sums[i] += load[k]
	}
	shards := make([][]*producePart, n)
	for _, p := range written {
		i := shardOf[topicPartition{p.topic, p.resp.Partition}]
		shards[i] = append(shards[i], p)
	}
	return shards
}

// pushShard pushes the envelopes of parts as one call and records each
// part's outcome; a failed call is every part's outcome, with the throttle
// a 429 carries. A canceled call is returned.
func pushShard(ctx context.Context, c *Conn, parts []*producePart, ends []int) error {
	count := 0
	for _, p := range parts {
		count += p.items[1] - p.items[0]
	}
	items := make([]queen.PushItem, 0, count)
	for _, p := range parts {
		part := strconv.FormatInt(int64(p.resp.Partition), 10)
		from := len(items)
		start := 0
		for i := p.items[0]; i < p.items[1]; i++ {
			items = append(items, queen.PushItem{Queue: p.topic, Partition: part, Payload: json.RawMessage(p.env[start:ends[i]])})
			start = ends[i]
		}
		p.pushed = [2]int{from, len(items)}
	}
	results, err := c.Queen().Push(ctx, items)
	if err != nil {
		logQueenFault(c, "push", err)
		code, throttle, msg, fatal := pushFault(err)
		if fatal != nil {
			return fatal
		}
		for _, p := range parts {
			p.outcome = pushOutcome{base: -1, code: code, msg: msg, throttle: throttle}
		}
		return nil
	}
	for _, p := range parts {
		base, code, msg := partitionOutcome(results[p.pushed[0]:p.pushed[1]])
		p.outcome = pushOutcome{base: base, code: code, msg: msg}
	}
	return nil
}

// settleGroup answers every live batch in request order. An idempotent
// batch keeps the projection's verdict, and a written one is remembered in
// its window, unless a batch of the same window before it in the group
// failed its write: the window then stands where running the requests one
// by one would have left it, so the batch is decided again against it.
// A batch is answered as written only if it was.
func (n *Node) settleGroup(group []*groupReq, now int64) {
	s := n.idem.seq
	broken := make(map[windowKey]bool)
	for _, r := range group {
		for _, p := range r.live {
			switch {
			case !p.idempotent():
				p.settleWrite(now)
			case broken[p.key]:
				p.settleBehindFailure(s, now)
			case p.seqCode != 0:
				p.fail(p.seqCode, "")
			case p.dupOf != nil:
				// Its original, earlier in the group, was written: the
				// window is not broken.
				p.resp.BaseOffset = p.dupOf.outcome.base
			case p.dup:
				p.resp.BaseOffset = p.dupBase // answered as the first time, written once
			case p.write:
				if p.settleWrite(now) {
					s.accepted(p.key, p.rb.ProducerEpoch, p.rb.FirstSequence, p.lastSeq, p.outcome.base)
				} else {
					broken[p.key] = true
				}
			default:
				p.fail(p.fault.Code, p.fault.Msg)
			}
		}
	}
}

// settleBehindFailure decides a batch whose window lost an earlier batch
// of the group to a failed write, against the window as it stands.
func (p *producePart) settleBehindFailure(s *sequencer, now int64) {
	e := p.epochBefore
	v, _ := decideSeq(&e, s.window(p.key, false), p.rb.ProducerEpoch, p.rb.FirstSequence, p.lastSeq)
	switch {
	case v.code != 0:
		p.fail(v.code, "")
	case v.dup:
		p.resp.BaseOffset = v.base
	case p.write:
		// Alone it would have been written too: its own write decides.
		if p.settleWrite(now) {
			s.accepted(p.key, p.rb.ProducerEpoch, p.rb.FirstSequence, p.lastSeq, p.outcome.base)
		}
	case p.dupOf != nil:
		// A repeat of the failed batch: not written either, and retried
		// like its original.
		p.fail(p.dupOf.outcome.code, p.dupOf.outcome.msg)
	case p.fault != nil:
		p.fail(p.fault.Code, p.fault.Msg)
	default:
		// Refused behind the failed batch; alone it would have been
		// taken, but nothing of it was written.
		code := p.seqCode
		if code == 0 {
			code = kerr.OutOfOrderSequenceNumber.Code
		}
		p.fail(code, "")
	}
}

// settleWrite answers a batch that is not sequenced (or that sequencing
// kept) from its write, reporting whether it was stored.
func (p *producePart) settleWrite(now int64) bool {
	switch {
	case p.fault != nil:
		p.fail(p.fault.Code, p.fault.Msg)
		return false
	case p.outcome.code != 0:
		p.fail(p.outcome.code, p.outcome.msg)
		return false
	}
	p.resp.BaseOffset = p.outcome.base
	if p.rb.Attributes&recordbatch.AttrLogAppendTime != 0 {
		p.resp.LogAppendTime = now
	}
	return true
}
