package node

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/txn"
)

// Produce v3–v13. Each record becomes one Queen message whose payload is the
// envelope of seed 001; Kafka partition n is Queen partition "n". A request
// is ONE push (Queen stores each partition's items together, at contiguous
// offsets), and the base offset answered is the one Queen assigned. Produce
// requests already waiting on a connection share that push and are then
// answered one by one, each exactly as if it had been pushed alone (see
// produceGroup). acks=1 and acks=all are the same durable call; acks=0 is
// processed the same and answered with no frame. A transactional produce
// writes nothing: its batches, sequenced like idempotent ones, are staged
// in the transaction (package txn) and answered base_offset -1 until
// EndTxn(commit) writes them all.
//
// v10 (KIP-951) adds leader hints to NOT_LEADER_OR_FOLLOWER answers, which
// Produce never gives: any node writes any partition. v11 lets a broker
// answer TRANSACTION_ABORTABLE; the facade keeps its v10 codes, valid at
// every version. v12 changes only what a transactional produce means under
// the finalized feature transaction.version >= 2 (KIP-890 part 2), which
// ApiVersions never advertises, so a transaction still adds its partitions
// with AddPartitionsToTxn (clients cap a transaction at v11 then). v13 names
// topics by id (catalogue.Verdicts.OfID): an unknown id is UNKNOWN_TOPIC_ID.

// producePart is one partition of a produce request on its way through.
type producePart struct {
	topic   string
	topicID [16]byte // v13: how the request named the topic
	resp    *kmsg.ProduceResponseTopicPartition
	raw     []byte
	rb      kmsg.RecordBatch

	env    []byte // its envelopes, item i ending at ends[i]
	items  [2]int // [first, end) of its envelopes' ends
	pushed [2]int // [first, end) of its items in the push, when written
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

// handleProduce answers one request as a group of one. Its answer is
// whole even under acks=0: dispatch, which observes it, drops the frame
// (produceAnswer).
func (n *Node) handleProduce(ctx context.Context, c *Conn, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resps, _, err := n.produceGroup(ctx, c, []*kmsg.ProduceRequest{req})
	if err != nil {
		return nil, err
	}
	return resps[0], nil
}

// produceAnswer is what a produce request is owed: its response, or under
// acks=0 nothing, its failures logged since they exist only here.
func produceAnswer(c *Conn, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) kmsg.Response {
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
				c.Logger().Warn("acks=0 produce failed", "topic", t.Topic, "partition", p.Partition, "error", kerr.ErrorForCode(p.ErrorCode), "reason", msg)
			}
		}
	}
	return nil
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
func (n *Node) admitProduce(ctx context.Context, c *Conn, version int16, resp *kmsg.ProduceResponse, parts []*producePart, txnID string) ([]*producePart, error) {
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
				if code, msg := n.txnAdmit(ctx, c, &txn.Batch{TransactionalID: txnID, ProducerID: p.rb.ProducerID, ProducerEpoch: p.rb.ProducerEpoch, Topic: p.topic, Partition: p.resp.Partition}); code != 0 {
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
