package e2e

// Helpers of the transaction tests (issue 8; seed 001 "Transactions and
// the idempotent producer" and its deviations). What they assert is what a
// Kafka client sees on the wire: error codes, end offsets, the records a
// consumer reads and the offsets a group has committed.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// attrTransactional is the RecordBatch attribute bit of a transactional
// batch.
const attrTransactional = 0x10

// newTxnKgo is a franz-go transactional producer with id, partitioning by
// the record's own Partition.
func newTxnKgo(t testing.TB, seeds []string, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return newKgo(t, seeds, append([]kgo.Opt{kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
}

// txnValues produces values to topic[p] inside the client's open
// transaction, one synchronous produce each, and fails t on an error.
func txnValues(t testing.TB, cl *kgo.Client, topic string, p int32, values ...string) {
	t.Helper()
	for _, v := range values {
		if err := cl.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("transactional produce %q to %s[%d]: %v", v, topic, p, err)
		}
	}
}

// commitValues is one whole transaction of cl: begin, values to topic[p],
// commit.
func commitValues(t testing.TB, cl *kgo.Client, topic string, p int32, values ...string) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	txnValues(t, cl, topic, p, values...)
	commitTxn(t, cl)
}

// commitTxn ends cl's transaction with a commit and fails t unless it lands.
func commitTxn(t testing.TB, cl *kgo.Client) {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush before commit: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("EndTransaction(commit): %v", err)
	}
}

// abortTxn aborts cl's transaction, buffered records first.
func abortTxn(t testing.TB, cl *kgo.Client) {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	if err := cl.AbortBufferedRecords(ctx); err != nil {
		t.Fatalf("abort buffered records: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("EndTransaction(abort): %v", err)
	}
}

// isOneOf reports whether err is any of the Kafka errors in want.
func isOneOf(err error, want ...*kerr.Error) bool {
	for _, w := range want {
		if errors.Is(err, w) {
			return true
		}
	}
	return false
}

// codeName is a Kafka error code with its name, for messages.
func codeName(code int16) string {
	if code == 0 {
		return "0 (NONE)"
	}
	return fmt.Sprintf("%d (%v)", code, kerr.ErrorForCode(code))
}

// listedOffsets is topic's offsets per partition as ListOffsets(-1) answers
// them at isolation level: read_uncommitted is the high watermark,
// read_committed the last stable offset.
func listedOffsets(t testing.TB, seeds []string, topic string, committed bool) map[int32]int64 {
	t.Helper()
	adm := newAdmin(t, seeds)
	ctx := ctxT(t, 15*time.Second)
	list := adm.ListEndOffsets
	if committed {
		list = adm.ListCommittedOffsets
	}
	// A request-level failure (a shard sent to a node just killed, which
	// the metadata still names until the live set drops it) is asked
	// again, as an admin tool would; only the last one fails the test.
	los, err := list(ctx, topic)
	for err != nil && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		los, err = list(ctx, topic)
	}
	if err != nil {
		t.Fatalf("ListOffsets %s (read_committed=%v): %v", topic, committed, err)
	}
	out := map[int32]int64{}
	los.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Errorf("ListOffsets %s[%d] (read_committed=%v): %v", o.Topic, o.Partition, committed, o.Err)
			return
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// endOffsets is topic's high watermark per partition.
func endOffsets(t testing.TB, seeds []string, topic string) map[int32]int64 {
	t.Helper()
	return listedOffsets(t, seeds, topic, false)
}

func sumOffsets(m map[int32]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// readToEnd reads every record of topic from the start of each partition
// up to the high watermark as listed now, at the isolation level given.
func readToEnd(t testing.TB, seeds []string, topic string, level kgo.IsolationLevel) []*kgo.Record {
	t.Helper()
	ends := endOffsets(t, seeds, topic)
	want := sumOffsets(ends)
	offs := map[int32]kgo.Offset{}
	for p := range ends {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := newKgo(t, seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}), kgo.FetchIsolationLevel(level))
	ctx := ctxT(t, 30*time.Second)
	var out []*kgo.Record
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s (ends %v)", len(out), want, topic, ends)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func valuesOf(rs []*kgo.Record) []string {
	vs := make([]string, len(rs))
	for i, r := range rs {
		vs[i] = string(r.Value)
	}
	return vs
}

// leader is a connection to the broker leading topic[0].
func leader(t testing.TB, cl *kgo.Client, topic string) *kgo.Broker {
	t.Helper()
	resp, err := metadataReq(topic).RequestWith(ctxT(t, 15*time.Second), cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) == 0 {
		t.Fatalf("metadata %s: %v %+v", topic, err, resp)
	}
	return cl.Broker(int(resp.Topics[0].Partitions[0].Leader))
}

// rawTxn drives one transactional id with raw kmsg requests, for the tests
// that must control exactly what is on the wire and which connection it
// rides. The sequence numbers per partition are the producer's own, kept
// across transactions of one epoch as every Kafka client keeps them.
type rawTxn struct {
	t     testing.TB
	id    string
	pid   int64
	epoch int16
	seq   map[string]int32 // "topic/partition" → next sequence
}

// initRawTxn sends InitProducerId for id with timeoutMs and fails t unless
// it is granted.
func initRawTxn(t testing.TB, cl *kgo.Client, id string, timeoutMs int32) *rawTxn {
	t.Helper()
	code, x := initRawTxnCode(t, cl, id, timeoutMs)
	if code != 0 {
		t.Fatalf("InitProducerId(%s, timeout %d ms): %s", id, timeoutMs, codeName(code))
	}
	return x
}

func initRawTxnCode(t testing.TB, cl *kgo.Client, id string, timeoutMs int32) (int16, *rawTxn) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr(id)
	req.TransactionTimeoutMillis = timeoutMs
	resp, err := req.RequestWith(ctxT(t, 20*time.Second), cl)
	if err != nil {
		t.Fatalf("InitProducerId(%s): %v", id, err)
	}
	return resp.ErrorCode, &rawTxn{t: t, id: id, pid: resp.ProducerID, epoch: resp.ProducerEpoch, seq: map[string]int32{}}
}

// addPartitions is AddPartitionsToTxn of parts of topic; the code of each.
func (x *rawTxn) addPartitions(cl *kgo.Client, topic string, parts ...int32) map[int32]int16 {
	x.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = x.id, x.pid, x.epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(x.t, 20*time.Second), cl)
	if err != nil {
		x.t.Fatalf("AddPartitionsToTxn(%s, %d partitions of %s): %v", x.id, len(parts), topic, err)
	}
	codes := map[int32]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes[rp.Partition] = rp.ErrorCode
		}
	}
	return x.answered("AddPartitionsToTxn", codes, len(parts))
}

// answered checks a per-partition answer covers the partitions asked.
func (x *rawTxn) answered(api string, codes map[int32]int16, asked int) map[int32]int16 {
	x.t.Helper()
	if len(codes) != asked {
		x.t.Errorf("%s(%s): %d partitions answered, %d asked", api, x.id, len(codes), asked)
	}
	return codes
}

// mustAddPartitions fails t unless every partition is added.
func (x *rawTxn) mustAddPartitions(cl *kgo.Client, topic string, parts ...int32) {
	x.t.Helper()
	for p, code := range x.addPartitions(cl, topic, parts...) {
		if code != 0 {
			x.t.Fatalf("AddPartitionsToTxn(%s) %s[%d]: %s", x.id, topic, p, codeName(code))
		}
	}
}

// addOffsets is AddOffsetsToTxn for group.
func (x *rawTxn) addOffsets(cl *kgo.Client, group string) int16 {
	x.t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = x.id, x.pid, x.epoch, group
	resp, err := req.RequestWith(ctxT(x.t, 20*time.Second), cl)
	if err != nil {
		x.t.Fatalf("AddOffsetsToTxn(%s, %s): %v", x.id, group, err)
	}
	return resp.ErrorCode
}

// commitOffsets is TxnOffsetCommit of offsets of topic for group, as an
// assign()-style consumer sends it (generation -1, no member id); the code
// of each partition.
func (x *rawTxn) commitOffsets(cl *kgo.Client, group, topic string, offsets map[int32]int64) map[int32]int16 {
	x.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = x.id, group, x.pid, x.epoch
	req.Generation, req.MemberID = -1, ""
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	// Named both ways: kgo sends the highest version both sides speak, and
	// v6 (KIP-1319) names a topic by id alone.
	rt.Topic, rt.TopicID = topic, x.topicID(cl, topic)
	for p, o := range offsets {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(x.t, 20*time.Second), cl)
	if err != nil {
		x.t.Fatalf("TxnOffsetCommit(%s, %s, %d partitions): %v", x.id, group, len(offsets), err)
	}
	codes := map[int32]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			codes[rp.Partition] = rp.ErrorCode
		}
	}
	return x.answered("TxnOffsetCommit", codes, len(offsets))
}

// topicID is topic's id, as Metadata answers it.
func (x *rawTxn) topicID(cl *kgo.Client, topic string) [16]byte {
	x.t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	resp, err := req.RequestWith(ctxT(x.t, 20*time.Second), cl)
	if err != nil {
		x.t.Fatalf("Metadata(%s): %v", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && *t.Topic == topic {
			return t.TopicID
		}
	}
	x.t.Fatalf("Metadata does not name %s", topic)
	return [16]byte{}
}

// produce sends values as one transactional batch to topic[p] on the
// connection br; the partition's code and base offset. An accepted batch
// advances the producer's sequence.
func (x *rawTxn) produce(br *kgo.Broker, topic string, p int32, values ...string) (int16, int64) {
	x.t.Helper()
	k := fmt.Sprintf("%s/%d", topic, p)
	req := produceRaw(topic, p, 10000, recordBatch(attrTransactional, x.pid, x.epoch, x.seq[k], values...))
	req.TransactionID = kmsg.StringPtr(x.id)
	raw, err := br.Request(ctxT(x.t, 20*time.Second), req)
	if err != nil {
		x.t.Fatalf("transactional Produce to %s: %v", k, err)
	}
	rp := raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if rp.ErrorCode == 0 {
		x.seq[k] += int32(len(values))
	}
	return rp.ErrorCode, rp.BaseOffset
}

// end is EndTxn(commit or abort) for this producer id and epoch. At v5
// (transaction.version 2, which kgo negotiates) a decision moves the
// producer to the id and epoch it answers, which x then uses, its
// sequences starting over, as a KIP-890 client does.
func (x *rawTxn) end(cl *kgo.Client, commit bool) int16 {
	x.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = x.id, x.pid, x.epoch, commit
	resp, err := req.RequestWith(ctxT(x.t, 20*time.Second), cl)
	if err != nil {
		x.t.Fatalf("EndTxn(%s, pid %d epoch %d, commit=%v): %v", x.id, x.pid, x.epoch, commit, err)
	}
	if resp.ErrorCode == 0 && resp.Version >= 5 && resp.ProducerID >= 0 {
		x.pid, x.epoch = resp.ProducerID, resp.ProducerEpoch
		clear(x.seq)
	}
	return resp.ErrorCode
}

func endTxnCode(t testing.TB, cl *kgo.Client, id string, pid int64, epoch int16, commit bool) int16 {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	resp, err := req.RequestWith(ctxT(t, 20*time.Second), cl)
	if err != nil {
		t.Fatalf("EndTxn(%s, pid %d epoch %d, commit=%v): %v", id, pid, epoch, commit, err)
	}
	return resp.ErrorCode
}

// storedValues is what Queen holds for topic[p], read past the facade.
func storedValues(t testing.TB, dev *queenDev, topic string, p int32) []string {
	t.Helper()
	res := dev.fetch(t, topic, fmt.Sprint(p), 0)
	var vs []string
	for _, r := range res.Records {
		e := decodeEnvelope(t, r.Payload)
		var v []byte
		if e.V != nil {
			var err error
			if v, err = base64.StdEncoding.DecodeString(*e.V); err != nil {
				t.Fatalf("stored value %q of %s[%d]: %v", *e.V, topic, p, err)
			}
		}
		vs = append(vs, string(v))
	}
	return vs
}

// eosInput is n records for topic round robin over parts partitions, the
// i-th valued and keyed id-%04d, and each partition's values in order: the
// input of the exactly-once copy tests.
func eosInput(topic string, parts int32, n int) ([]*kgo.Record, map[int32][]string) {
	want := map[int32][]string{}
	input := make([]*kgo.Record, n)
	for i := range input {
		p := int32(i) % parts
		v := fmt.Sprintf("id-%04d", i)
		input[i] = &kgo.Record{Topic: topic, Partition: p, Key: []byte(v), Value: []byte(v)}
		want[p] = append(want[p], v)
	}
	return input, want
}

// assertCopiedOnce checks an exactly-once copy into out: its end offsets
// are the input's (each committed transaction of N advanced the log by N),
// and read committed it holds each of the n input values once, every
// partition its input partition's values in order.
func assertCopiedOnce(t *testing.T, seeds []string, out string, inEnds map[int32]int64, want map[int32][]string, n int) {
	t.Helper()
	assert.Equal(t, inEnds, endOffsets(t, seeds, out), "output end offsets: each committed transaction of N advances the log by N")
	got := map[int32][]string{}
	seen := map[string]int{}
	for _, r := range readToEnd(t, seeds, out, kgo.ReadCommitted()) {
		got[r.Partition] = append(got[r.Partition], string(r.Value))
		seen[string(r.Value)]++
	}
	for v, c := range seen {
		if c != 1 {
			t.Errorf("%s is in the output %d times", v, c)
		}
	}
	assert.Len(t, seen, n, "distinct ids in the output")
	for p := range want {
		assert.Equal(t, want[p], got[p], "output partition %d against input partition %d, in order", p, p)
	}
}
