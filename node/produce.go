package node

import (
	"context"
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/producepush"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/transport"
	"github.com/queen-mq/queen-kafka/txn"
)

// Each produced record becomes one Queen message whose payload is the
// envelope of seed 001; Kafka partition n is Queen partition "n". A request
// is ONE push (Queen stores each partition's items together, at contiguous
// offsets), and the base offset answered is the one Queen assigned. Produce
// requests already waiting on a connection share that push and are then
// answered one by one, each exactly as if it had been pushed alone (see
// produceGroup). acks=1 and acks=all are the same durable call; acks=0 is
// processed the same and answered with no frame. A transactional produce
// writes nothing: its batches, sequenced like idempotent ones, are staged
// in the transaction (package txn) and answered base_offset -1 until
// EndTxn(commit) writes them all. Topics named by id resolve through
// catalogue.Verdicts.OfID.

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
	Frame:        transport.MaxFrame,
	ItemOverhead: int(unsafe.Sizeof(queen.PushItem{})) + itemOverhead,
})

// produceBatch is Produce's row handler, and the only way into the
// produce path: the wire hands it the Produce requests read and waiting on
// a connection, at most maxCoalesce of them and coalesceFrameBytes of
// frames, and it answers the first taken (produceGroup) with their whole
// answers. acks=0 is owed no frame (produceAnswer); a produce's frame is
// garbage once answered, as its records are envelopes in their own buffer
// by then and its strings are copies.
func (n *Node) produceBatch() *transport.Batch {
	return &transport.Batch{
		MaxRequests: maxCoalesce,
		MaxBytes:    coalesceFrameBytes,
		Answer:      n.answerProduce,
		Owed:        produceAnswer,
		Recycle:     true,
	}
}

// answerProduce runs reqs, consecutive Produce requests of one connection,
// as one group (produceGroup) and returns the answers of the first taken.
func (n *Node) answerProduce(ctx context.Context, c *transport.Conn, reqs []kmsg.Request) ([]kmsg.Response, int, error) {
	prs := make([]*kmsg.ProduceRequest, len(reqs))
	for i, r := range reqs {
		prs[i] = r.(*kmsg.ProduceRequest)
	}
	answers, taken, err := n.produceGroup(ctx, c, prs)
	if err != nil {
		return nil, 0, err
	}
	resps := make([]kmsg.Response, taken)
	for i, a := range answers[:taken] {
		resps[i] = a
	}
	return resps, taken, nil
}

// groupReq is one request of a group on its way through.
type groupReq struct {
	req  *kmsg.ProduceRequest
	resp *kmsg.ProduceResponse
	live []*producePart // admitted, in request order
}

// producePart is one partition of a produce request on its way through.
type producePart struct {
	topic   string
	topicID [16]byte // v13: how the request named the topic
	resp    *kmsg.ProduceResponseTopicPartition
	raw     []byte
	rb      kmsg.RecordBatch

	env   []byte // its envelopes, item i ending at ends[i]
	items [2]int // [first, end) of its envelopes' ends
	// keys are its records' Queen transactionIds (keyParts), nil when the
	// batch is not idempotent or keys are off.
	keys []string
	// recordBytes is what its records weigh as sent (a transaction's caps).
	recordBytes int64

	// batch is the partition as the group's sequencing sees it (its
	// decode fault, whether it is written, its push outcome and its
	// answer); throttle is what a 429 on its push carried.
	batch    producer.Batch
	throttle int32
	// req is the index in its group of the request it belongs to.
	req int
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
//     producers' locks (producer.Sequencer.Sequence), so that a batch of
//     request 2 follows request 1's batch of the same producer-partition:
//     a gap refuses only that batch and writes nothing of it, a repeat of
//     an earlier batch is answered with that batch's offsets;
//   - push every batch kept (see pushGroup);
//   - settle in request order against the live windows
//     (producer.Sequencer.Settle), remembering each written batch, and
//     answer each partition as settled. A batch is answered as written
//     only if it was, so a batch behind one whose write failed is refused
//     as it would have been alone.
func (n *Node) produceGroup(ctx context.Context, c *transport.Conn, reqs []*kmsg.ProduceRequest) ([]*kmsg.ProduceResponse, int, error) {
	// The group's decoded records are paid for on the process-wide budget
	// until its push is over.
	d := decoding.GetFor(c.Identity())
	var chunk []byte
	var ends []int
	defer d.Release() // the push is over before release

	var group []*groupReq
	body := 0
	txnID := ""
	for i, req := range reqs {
		// A transactional produce is a group of its own: it stages, and
		// pushes nothing.
		if id := transactionalID(req); i == 0 {
			txnID = id
		} else if id != "" || txnID != "" {
			break
		}
		r := &groupReq{req: req, resp: req.ResponseKind().(*kmsg.ProduceResponse)}
		parts := produceParts(req, r.resp)
		live, err := n.admitProduce(ctx, c, req.Version, r.resp, parts, txnID)
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
		for _, p := range live {
			p.req = i
		}
		r.live = live
		group = append(group, r)
	}

	batches := groupBatches(group)
	unlock := n.sequencer.Sequence(c.Identity(), batches)
	defer unlock()
	if n.cfg.DedupKeys {
		keyParts(group)
	}
	if txnID != "" {
		n.stageGroup(ctx, c, txnID, group[0], ends)
	} else if err := pushGroup(ctx, c, group, ends); err != nil {
		return nil, 0, err
	}
	n.sequencer.Settle(batches)

	now := n.now().UnixMilli()
	resps := make([]*kmsg.ProduceResponse, len(group))
	records, written := 0, 0
	for i, r := range group {
		resps[i] = r.resp
		for _, p := range r.live {
			p.answer(now)
			if p.batch.Write {
				r.resp.ThrottleMillis = max(r.resp.ThrottleMillis, p.throttle)
			}
			if p.batch.Answer.Stored {
				records, written = records+int(p.rb.NumRecords), written+1
			}
		}
	}
	n.obs.Produced(records, written)
	return resps, len(group), nil
}

// produceParts lays out the response in request order and returns one
// producePart per partition, each pointing at its answer.
func produceParts(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) []*producePart {
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	var parts []*producePart
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			sp := &st.Partitions[j]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rt.Partitions[j].Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			parts = append(parts, &producePart{topic: rt.Topic, topicID: rt.TopicID, resp: sp, raw: rt.Partitions[j].Records})
		}
	}
	return parts
}

// transactionalID is the transaction a produce request belongs to, "" for
// none. An empty id is no id: a client that encodes the nullable field as
// a string (brod, through Erlang's kafka_protocol) sends "" for a plain
// produce, and Apache Kafka takes those bytes as one.
func transactionalID(req *kmsg.ProduceRequest) string {
	if req.TransactionID == nil {
		return ""
	}
	return *req.TransactionID
}

// admitProduce checks topics and partitions, then each batch's framing and
// checksum, and returns the partitions still standing. A batch of a
// transactional request (txnID) must be a transactional one, and is
// admitted by the transaction before it is decoded (a fenced producer, a
// partition not added); a transactional batch anywhere else is refused.
// timeout_ms is not acted on: the Queen client's own ten-second budget
// bounds a produce (seed 001).
func (n *Node) admitProduce(ctx context.Context, c *transport.Conn, version int16, resp *kmsg.ProduceResponse, parts []*producePart, txnID string) ([]*producePart, error) {
	var live []*producePart
	topics := n.cats.Verdicts(callerOf(c), faults.Produce, &resp.ThrottleMillis)
	seen := make(map[topicPartition]bool, len(parts))
	for _, p := range parts {
		if version >= 13 {
			name, tv, err := topics.OfID(ctx, p.topicID)
			if err != nil {
				return nil, err
			}
			if name == "" {
				p.fail(tv.Code, tv.Msg)
				continue
			}
			p.topic = name
		}
		k := topicPartition{p.topic, p.resp.Partition}
		if seen[k] {
			// One batch per partition per request: a second would be
			// sequenced against a window the first has not yet advanced.
			p.fail(kerr.InvalidRequest.Code, "partition named twice in one produce request")
			continue
		}
		seen[k] = true
		tv, err := topics.Of(ctx, p.topic)
		if err != nil {
			return nil, err
		}
		switch {
		case tv.Code != 0:
			p.fail(tv.Code, tv.Msg)
			continue
		case !topics.HasPartition(ctx, p.topic, &tv, p.resp.Partition):
			p.fail(kerr.UnknownTopicOrPartition.Code, catalogue.UnknownPartitionMsg)
			continue
		}
		if f := recordbatch.ParseProduce(p.raw, &p.rb); f != nil {
			p.fail(f.Code, f.Msg)
			continue
		}
		switch {
		case len(p.raw) > int(tv.Config.MaxMessageBytes()):
			// Kafka's rule (UnifiedLog.analyzeAndValidateRecords): the
			// whole batch as sent, log overhead included, against the
			// topic's max.message.bytes.
			p.fail(kerr.MessageTooLarge.Code, fmt.Sprintf("The record batch size in the append to %s-%d is %d bytes which exceeds the maximum configured value of %d.", p.topic, p.resp.Partition, len(p.raw), tv.Config.MaxMessageBytes()))
		case p.rb.Attributes&recordbatch.AttrCodecMask == recordbatch.CodecZstd && version < 7:
			p.fail(kerr.UnsupportedCompressionType.Code, "produce requests below version 7 are not allowed to use ZStandard compression")
		case txnID == "" && p.rb.Attributes&recordbatch.AttrTransactional != 0:
			p.fail(kerr.TransactionalIDAuthorizationFailed.Code, "transactional records without a transactional id")
		case txnID != "" && (p.rb.Attributes&recordbatch.AttrTransactional == 0 || p.rb.ProducerID < 0):
			p.fail(kerr.InvalidRecord.Code, "a transactional produce carries only transactional record batches")
		case p.rb.NumRecords == 0:
			p.fail(kerr.InvalidRecord.Code, "record batch carries no records")
		default:
			if txnID != "" {
				if code, msg := n.txnAdmit(ctx, c, &txn.Batch{TransactionalID: txnID, ProducerID: p.rb.ProducerID, ProducerEpoch: p.rb.ProducerEpoch, Topic: p.topic, Partition: p.resp.Partition, Implicit: version >= 12}); code != 0 {
					p.fail(code, msg)
					continue
				}
			}
			live = append(live, p)
		}
	}
	return live, nil
}

func (p *producePart) fail(code int16, msg string) {
	p.resp.ErrorCode = code
	p.resp.BaseOffset = -1
	if msg != "" {
		p.resp.ErrorMessage = &msg // encoded from v8 only
	}
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
		p.batch.Fault = f
		if f != nil {
			continue
		}
		if cap(env) == cap(room) {
			chunk = chunk[:len(chunk)+len(env)]
		} else {
			chunk = env // envelopes took an array of their own
		}
		p.env, p.items, p.recordBytes = env, [2]int{from, len(ends)}, d.RecordBytes()
		grown += len(env) + (len(ends)-from)*(itemOverhead+len(p.topic))
	}
	return chunk, ends, grown, false
}

// groupBatches is the group's live partitions as sequencing sees them,
// request by request.
func groupBatches(group []*groupReq) [][]*producer.Batch {
	batches := make([][]*producer.Batch, len(group))
	for i, r := range group {
		batches[i] = make([]*producer.Batch, len(r.live))
		for j, p := range r.live {
			b := &p.batch
			b.Topic, b.Partition = p.topic, p.resp.Partition
			b.ProducerID, b.Epoch = p.rb.ProducerID, p.rb.ProducerEpoch
			b.FirstSeq, b.Records = p.rb.FirstSequence, p.rb.NumRecords
			batches[i][j] = b
		}
	}
	return batches
}

// keyParts gives each idempotent or transactional batch to be written its
// records' Queen transactionIds (producer.DedupKeys), so that a retry whose
// first write Queen stored, and whose window this node lost or never held,
// is answered duplicate with the original offsets instead of stored again.
func keyParts(group []*groupReq) {
	for _, r := range group {
		for _, p := range r.live {
			if p.batch.Write && p.rb.ProducerID >= 0 {
				p.keys = producer.DedupKeys(p.rb.ProducerID, p.rb.ProducerEpoch, p.rb.FirstSequence, p.items[1]-p.items[0])
			}
		}
	}
}

// stageGroup is pushGroup for a transactional request (r, the group's
// only one): each batch sequencing kept is staged in transaction id, under
// its producer's lock still, so a retried batch is staged once; it is
// answered base_offset -1, as nothing is in the log until EndTxn(commit).
func (n *Node) stageGroup(ctx context.Context, c *transport.Conn, id string, r *groupReq, ends []int) {
	var parts []*producePart
	var batches []*txn.Batch
	for _, p := range r.live {
		if !p.batch.Write {
			continue
		}
		payloads := make([]json.RawMessage, 0, p.items[1]-p.items[0])
		start := 0
		for i := p.items[0]; i < p.items[1]; i++ {
			payloads = append(payloads, json.RawMessage(p.env[start:ends[i]]))
			start = ends[i]
		}
		parts = append(parts, p)
		// Cluster mode: a v12+ batch's staging write opens the transaction
		// Admit let it into (Shared.opening); single mode's re-admission
		// at staging adds nothing implicitly that Admit did not.
		batches = append(batches, &txn.Batch{TransactionalID: id, ProducerID: p.rb.ProducerID, ProducerEpoch: p.rb.ProducerEpoch, FirstSeq: p.rb.FirstSequence,
			Topic: p.topic, Partition: p.resp.Partition, Payloads: payloads, Keys: p.keys, Bytes: p.recordBytes, Implicit: n.txnShared != nil && r.req.Version >= 12})
	}
	for i, o := range n.txnStageAll(ctx, c, batches) {
		parts[i].batch.Outcome = producer.Outcome{Base: -1, Code: o.Code, Msg: o.Msg}
	}
}

// pushGroup writes the envelopes of every batch to be written and records
// each batch's outcome (and a 429's throttle), through package producepush:
// up to producepush.MaxShards concurrent pushes, each holding whole
// partitions in group order. A canceled call is returned.
func pushGroup(ctx context.Context, c *transport.Conn, group []*groupReq, ends []int) error {
	var written []*producePart
	var parts []producepush.Part
	for _, r := range group {
		for _, p := range r.live {
			if p.batch.Write {
				written = append(written, p)
				parts = append(parts, producepush.Part{Topic: p.topic, Partition: p.resp.Partition, Env: p.env, Items: p.items, Keys: p.keys, Req: p.req})
			}
		}
	}
	err := producepush.Push(ctx, c.Queen(), c.Logger(), parts, ends)
	for i, p := range written {
		p.batch.Outcome, p.throttle = parts[i].Outcome, parts[i].Throttle
	}
	return err
}

// answer writes the partition's answer as sequencing settled it: refused,
// or at its base offset, with the append time of a LogAppendTime batch its
// own write stored.
func (p *producePart) answer(now int64) {
	a := &p.batch.Answer
	if a.Code != 0 {
		p.fail(a.Code, a.Msg)
		return
	}
	p.resp.BaseOffset = a.Base
	if a.Stored && p.rb.Attributes&recordbatch.AttrLogAppendTime != 0 {
		p.resp.LogAppendTime = now
	}
}

// produceAnswer is what a produce request is owed: its response, or under
// acks=0 nothing, its failures logged since they exist only here.
func produceAnswer(c *transport.Conn, r kmsg.Request, rr kmsg.Response) kmsg.Response {
	req, resp := r.(*kmsg.ProduceRequest), rr.(*kmsg.ProduceResponse)
	if req.Acks != 0 {
		return resp
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				msg := ""
				if p.ErrorMessage != nil {
					msg = *p.ErrorMessage
				}
				faults.Warn(c.Logger(), "acks=0 produce failed", "acks=0 produce failed", "topic", t.Topic, "partition", p.Partition, "error", kerr.ErrorForCode(p.ErrorCode), "reason", msg)
			}
		}
	}
	return nil
}
