package node

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// Transactions against a served node, raw requests over TCP as a client
// sends them (seed 001, "Transactions and the idempotent producer").

// txnEnv is a served single-mode node over a dev broker, with its clock
// under the test's hand (the transaction timeouts and the sweep read it).
type txnEnv struct {
	*dataEnv
	addr  string
	clock *testsupport.FakeClock
}

func newTxnEnv(t *testing.T, env map[string]string) *txnEnv {
	t.Helper()
	// Advertised where it listens, so that a real client follows Metadata
	// back to it.
	_, env = fixedAddrEnv(t, env)
	e := &txnEnv{dataEnv: newDataEnv(t, dev.Options{}, env), clock: testsupport.NewFakeClock(time.Now())}
	e.n.txns = newTxns(e.n.cfg, e.n.queen, testLogger(), e.n.producerIDs, e.n.coord, e.clock)
	e.addr = serveTestNode(t, e.n)
	return e
}

// rawTxn is one transactional id driven by hand: its producer id and
// epoch, and the next sequence of each partition, kept across transactions
// of one epoch as a client keeps them.
type rawTxn struct {
	t     *testing.T
	id    string
	pid   int64
	epoch int16
	seq   map[topicPartition]int32
}

func initTxn(t *testing.T, k *kclient, id string, timeoutMs int32) (*kmsg.InitProducerIDResponse, *rawTxn) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = 4, &id, timeoutMs
	resp := k.roundTrip(req).(*kmsg.InitProducerIDResponse)
	return resp, &rawTxn{t: t, id: id, pid: resp.ProducerID, epoch: resp.ProducerEpoch, seq: map[topicPartition]int32{}}
}

func mustInitTxn(t *testing.T, k *kclient, id string) *rawTxn {
	t.Helper()
	resp, x := initTxn(t, k, id, 60_000)
	require.Equal(t, int16(0), resp.ErrorCode, "InitProducerId %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	return x
}

func (x *rawTxn) add(k *kclient, topic string, parts ...int32) []int16 {
	x.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, x.id, x.pid, x.epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	var codes []int16
	for _, t := range k.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse).Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	require.Len(x.t, codes, len(parts))
	return codes
}

func (x *rawTxn) mustAdd(k *kclient, topic string, parts ...int32) {
	x.t.Helper()
	for i, c := range x.add(k, topic, parts...) {
		require.Equal(x.t, int16(0), c, "AddPartitionsToTxn %s[%d]: %v", topic, parts[i], kerr.ErrorForCode(c))
	}
}

// produceAt sends values as one transactional batch at sequence seq; the
// partition's code and base offset.
func (x *rawTxn) produceAt(k *kclient, topic string, p int32, seq int32, values ...string) (int16, int64) {
	x.t.Helper()
	var recs []kmsg.Record
	for _, v := range values {
		recs = append(recs, kmsg.Record{Value: []byte(v)})
	}
	raw := batchtest.Batch{Attrs: recordbatch.AttrTransactional, Idem: true, PID: x.pid, Epoch: x.epoch, FirstSeq: seq, FirstTS: 1, Records: recs}.Encode(x.t)
	req := produceReq(9, -1, topic, p, raw)
	req.TransactionID = &x.id
	rp := k.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return rp.ErrorCode, rp.BaseOffset
}

// produce sends values at the partition's next sequence, which an accepted
// batch advances.
func (x *rawTxn) produce(k *kclient, topic string, p int32, values ...string) (int16, int64) {
	x.t.Helper()
	tp := topicPartition{topic, p}
	code, base := x.produceAt(k, topic, p, x.seq[tp], values...)
	if code == 0 {
		x.seq[tp] += int32(len(values))
	}
	return code, base
}

func (x *rawTxn) mustProduce(k *kclient, topic string, p int32, values ...string) {
	x.t.Helper()
	code, base := x.produce(k, topic, p, values...)
	require.Equal(x.t, int16(0), code, "transactional produce to %s[%d]: %v", topic, p, kerr.ErrorForCode(code))
	require.Equal(x.t, int64(-1), base, "a transactional produce answers base_offset -1 (seed 001)")
}

func (x *rawTxn) addOffsets(k *kclient, group string) int16 {
	x.t.Helper()
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = 3, x.id, x.pid, x.epoch, group
	return k.roundTrip(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
}

func (x *rawTxn) commitOffsets(k *kclient, group, member string, generation int32, topic string, offsets map[int32]int64) map[int32]int16 {
	x.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, x.id, x.pid, x.epoch
	req.Group, req.MemberID, req.Generation = group, member, generation
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	codes := map[int32]int16{}
	for _, t := range k.roundTrip(req).(*kmsg.TxnOffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			codes[p.Partition] = p.ErrorCode
		}
	}
	require.Len(x.t, codes, len(offsets))
	return codes
}

func (x *rawTxn) end(k *kclient, commit bool) int16 {
	x.t.Helper()
	return endTxnAt(k, 3, x.id, x.pid, x.epoch, commit)
}

func endTxnAt(k *kclient, version int16, id string, pid int64, epoch int16, commit bool) int16 {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, id, pid, epoch, commit
	return k.roundTrip(req).(*kmsg.EndTxnResponse).ErrorCode
}

// values is what Queen holds of topic[p], and the partition's log end.
func (e *txnEnv) values(topic string, p int32) ([]string, int64) {
	e.t.Helper()
	res, recs := e.stored(topic, p)
	var vs []string
	for _, r := range recs {
		vs = append(vs, string(r.Value))
	}
	return vs, res.HighWatermark
}

// A committed transaction of N records advances the log end offset by N,
// an aborted one by 0 (seed 001's deviation), and nothing of an open one is
// in the log; a read_committed fetch answers the high watermark as the
// last stable offset with no aborted transactions.
func TestTxnCommitAdvancesByNAbortByZero(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("out")
	k := dial(t, e.addr)
	x := mustInitTxn(t, k, "tx")
	x.mustAdd(k, "out", 0, 1)
	x.mustProduce(k, "out", 0, "a", "b", "c")
	x.mustProduce(k, "out", 1, "d", "e")
	x.mustProduce(k, "out", 0, "f")
	_, hw := e.values("out", 0)
	require.Equal(t, int64(0), hw, "an open transaction's records are in the log")

	require.Equal(t, int16(0), x.end(k, true))
	v0, hw0 := e.values("out", 0)
	v1, hw1 := e.values("out", 1)
	require.Equal(t, []string{"a", "b", "c", "f"}, v0)
	require.Equal(t, int64(4), hw0, "a commit of 4 records advances partition 0 by 4")
	require.Equal(t, []string{"d", "e"}, v1)
	require.Equal(t, int64(2), hw1)

	x.mustAdd(k, "out", 0)
	x.mustProduce(k, "out", 0, "aborted-1", "aborted-2")
	require.Equal(t, int16(0), x.end(k, false))
	_, hw = e.values("out", 0)
	require.Equal(t, int64(4), hw, "an abort advances the log end offset by 0")

	// The next transaction follows on the same sequences.
	x.mustAdd(k, "out", 0)
	x.mustProduce(k, "out", 0, "g")
	require.Equal(t, int16(0), x.end(k, true))
	v0, hw0 = e.values("out", 0)
	require.Equal(t, []string{"a", "b", "c", "f", "g"}, v0)
	require.Equal(t, int64(5), hw0)

	for _, level := range []int8{0, 1} {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.IsolationLevel = 6, -1, 1<<20, level
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "out"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = 0, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		fp := k.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		require.Equal(t, int16(0), fp.ErrorCode)
		require.Equal(t, int64(5), fp.HighWatermark)
		require.Equal(t, fp.HighWatermark, fp.LastStableOffset, "isolation %d: last stable offset", level)
		require.Empty(t, fp.AbortedTransactions)
	}
}

// Two producers, one transactional id: the second keeps the producer id at
// the next epoch, and the first is fenced from then on; its commit writes
// nothing.
func TestTxnFencedProducerWritesNothing(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("out")
	ka, kb := dial(t, e.addr), dial(t, e.addr)
	a := mustInitTxn(t, ka, "tx")
	a.mustAdd(ka, "out", 0)
	a.mustProduce(ka, "out", 0, "zombie-1", "zombie-2")

	b := mustInitTxn(t, kb, "tx")
	require.Equal(t, a.pid, b.pid, "a transactional id keeps its producer id")
	require.Equal(t, a.epoch+1, b.epoch)

	code, _ := a.produce(ka, "out", 0, "zombie-3")
	require.Equal(t, kerr.ProducerFenced.Code, code, "the fenced producer's produce")
	require.Equal(t, kerr.ProducerFenced.Code, a.add(ka, "out", 1)[0])
	require.Equal(t, kerr.ProducerFenced.Code, a.end(ka, true), "the fenced producer's commit")
	require.Equal(t, kerr.InvalidProducerEpoch.Code, endTxnAt(ka, 1, a.id, a.pid, a.epoch, true), "EndTxn v1 of a fenced epoch")
	_, hw := e.values("out", 0)
	require.Equal(t, int64(0), hw, "the fenced producer wrote")

	b.mustAdd(kb, "out", 0)
	b.mustProduce(kb, "out", 0, "b-1")
	require.Equal(t, int16(0), b.end(kb, true))
	v, _ := e.values("out", 0)
	require.Equal(t, []string{"b-1"}, v)
}

// A stage outlives its connection: a commit from a new connection with the
// same producer id and epoch lands it.
func TestTxnCommitResumedFromANewConnection(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("out")
	first := dial(t, e.addr)
	x := mustInitTxn(t, first, "tx")
	x.mustAdd(first, "out", 0)
	x.mustProduce(first, "out", 0, "s1", "s2", "s3")
	first.nc.Close()

	second := dial(t, e.addr)
	require.Equal(t, int16(0), x.end(second, true), "EndTxn(commit) from a new connection")
	v, hw := e.values("out", 0)
	require.Equal(t, []string{"s1", "s2", "s3"}, v)
	require.Equal(t, int64(3), hw)
}

// After a restart the stage is gone: the resumed commit is INVALID_TXN_STATE
// and writes nothing; the id keeps its producer id at the next epoch.
func TestTxnRestartLosesTheStage(t *testing.T) {
	addr, env := fixedAddrEnv(t, nil)
	e := newDataEnv(t, dev.Options{}, env)
	e.createTopic("out")
	_, stop := serveStoppable(t, e.n)
	k := dial(t, addr)
	x := mustInitTxn(t, k, "tx")
	x.mustAdd(k, "out", 0)
	x.mustProduce(k, "out", 0, "lost")
	stop()

	n2 := e.node(env)
	serveTestNode(t, n2)
	k2 := dial(t, addr)
	require.Equal(t, kerr.InvalidTxnState.Code, x.end(k2, true), "a commit the restart lost")
	res, _ := e.stored("out", 0)
	require.Equal(t, int64(0), res.HighWatermark, "the lost stage wrote")
	y := mustInitTxn(t, k2, "tx")
	require.Equal(t, x.pid, y.pid, "the producer id across the restart")
	require.Equal(t, x.epoch+1, y.epoch)
}

// A transactional batch is sequenced like an idempotent one: a retry is
// answered -1 again and staged once, a gap is refused; and it may only go
// to a partition the transaction added.
func TestTxnProduceSequencedAndAdded(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("out")
	k := dial(t, e.addr)
	x := mustInitTxn(t, k, "tx")
	x.mustAdd(k, "out", 0)
	code, _ := x.produceAt(k, "out", 1, 0, "not-added")
	require.Equal(t, kerr.InvalidTxnState.Code, code, "a partition not added")
	for range 2 {
		code, base := x.produceAt(k, "out", 0, 0, "once-1", "once-2")
		require.Equal(t, int16(0), code, kerr.ErrorForCode(code))
		require.Equal(t, int64(-1), base)
	}
	code, _ = x.produceAt(k, "out", 0, 7, "gap")
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, code)
	code, _ = x.produceAt(k, "out", 0, 2, "next")
	require.Equal(t, int16(0), code, kerr.ErrorForCode(code))
	require.Equal(t, int16(0), x.end(k, true))
	v, _ := e.values("out", 0)
	require.Equal(t, []string{"once-1", "once-2", "next"}, v, "a retried batch staged twice")
}

// Offsets commit with the records, in the same call, and a TxnOffsetCommit
// of a stale member is refused as OffsetCommit refuses it.
func TestTxnOffsetsCommitWithTheRecords(t *testing.T) {
	e := newTxnEnv(t, map[string]string{"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS": "0"})
	e.createTopic("in")
	e.createTopic("out")
	k := dial(t, e.addr)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 3, "billing", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10_000, 10_000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	j := k.roundTrip(join).(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(0), j.ErrorCode)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 2, "billing", j.MemberID, j.Generation
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte{0}}}
	require.Equal(t, int16(0), k.roundTrip(sync).(*kmsg.SyncGroupResponse).ErrorCode)

	x := mustInitTxn(t, k, "tx")
	require.Equal(t, int16(0), x.addOffsets(k, "billing"))
	require.Equal(t, map[int32]int16{0: kerr.IllegalGeneration.Code}, x.commitOffsets(k, "billing", j.MemberID, j.Generation+1, "in", map[int32]int64{0: 1}))
	require.Equal(t, map[int32]int16{0: kerr.UnknownMemberID.Code}, x.commitOffsets(k, "billing", "ghost", j.Generation, "in", map[int32]int64{0: 1}))
	require.Equal(t, map[int32]int16{0: 0, 1: 0}, x.commitOffsets(k, "billing", j.MemberID, j.Generation, "in", map[int32]int64{0: 18, 1: 4}))
	x.mustAdd(k, "out", 0)
	x.mustProduce(k, "out", 0, "r")

	fetch := func() map[int32]int64 {
		offsets, codes := stableFetch(t, k, 7, false, "billing", "in", []int32{0, 1})
		require.Equal(t, map[int32]int16{0: 0, 1: 0}, codes)
		return offsets
	}
	require.Equal(t, map[int32]int64{0: -1, 1: -1}, fetch(), "offsets visible before the commit")
	require.Equal(t, int16(0), x.end(k, true))
	require.Equal(t, map[int32]int64{0: 18, 1: 4}, fetch())
	v, _ := e.values("out", 0)
	require.Equal(t, []string{"r"}, v)
}

// Every cap of seed 000, on a node with it made small, and the two derived
// ones: past a cap the answer is MESSAGE_TOO_LARGE (INVALID_COMMIT_OFFSET_SIZE
// for offsets, INVALID_TRANSACTION_TIMEOUT for the timeout), the producer
// aborts, nothing of the transaction is written, and the next one lands.
func TestTxnCaps(t *testing.T) {
	// next is one more transaction of x that lands.
	next := func(t *testing.T, e *txnEnv, k *kclient, x *rawTxn, topic string) {
		t.Helper()
		x.mustAdd(k, topic, 0)
		x.mustProduce(k, topic, 0, "after")
		require.Equal(t, int16(0), x.end(k, true))
		v, _ := e.values(topic, 0)
		require.Equal(t, []string{"after"}, v, "the capped transaction wrote, or the next did not")
	}
	t.Run("records", func(t *testing.T) {
		e := newTxnEnv(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_RECORDS": "3"})
		e.createTopic("out")
		k := dial(t, e.addr)
		x := mustInitTxn(t, k, "tx")
		x.mustAdd(k, "out", 0)
		x.mustProduce(k, "out", 0, "1", "2", "3")
		code, _ := x.produce(k, "out", 0, "4")
		require.Equal(t, kerr.MessageTooLarge.Code, code)
		require.Equal(t, kerr.InvalidTxnState.Code, x.end(k, true), "a capped transaction commits")
		require.Equal(t, int16(0), x.end(k, false))
		next(t, e, k, x, "out")
	})
	t.Run("bytes", func(t *testing.T) {
		e := newTxnEnv(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_BYTES": "1024"})
		e.createTopic("out")
		k := dial(t, e.addr)
		x := mustInitTxn(t, k, "tx")
		x.mustAdd(k, "out", 0)
		// The cap counts record bytes (keys, values, headers), not their
		// envelopes: exactly 1024 bytes of values fit.
		x.mustProduce(k, "out", 0, string(make([]byte, 1000)), string(make([]byte, 24)))
		code, _ := x.produce(k, "out", 0, "x")
		require.Equal(t, kerr.MessageTooLarge.Code, code)
		require.Equal(t, int16(0), x.end(k, false))
		next(t, e, k, x, "out")
	})
	t.Run("staged-bytes", func(t *testing.T) {
		e := newTxnEnv(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_BYTES": "1000", "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES": "1500"})
		e.createTopic("out")
		e.createTopic("out2")
		k := dial(t, e.addr)
		a, b := mustInitTxn(t, k, "a"), mustInitTxn(t, k, "b")
		a.mustAdd(k, "out", 0)
		b.mustAdd(k, "out", 0)
		a.mustProduce(k, "out", 0, string(make([]byte, 900)))
		code, _ := b.produce(k, "out", 0, string(make([]byte, 700)))
		require.Equal(t, kerr.MessageTooLarge.Code, code, "the process's staged bytes are one budget")
		require.Equal(t, int16(0), b.end(k, false))
		require.Equal(t, int16(0), a.end(k, true))
		next(t, e, k, b, "out2")
	})
	t.Run("open", func(t *testing.T) {
		e := newTxnEnv(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_OPEN": "1"})
		e.createTopic("out")
		k := dial(t, e.addr)
		a, b := mustInitTxn(t, k, "a"), mustInitTxn(t, k, "b")
		a.mustAdd(k, "out", 0)
		require.Equal(t, []int16{kerr.MessageTooLarge.Code}, b.add(k, "out", 1), "a second open transaction")
		require.Equal(t, int16(0), a.end(k, false))
		next(t, e, k, b, "out")
	})
	t.Run("timeout", func(t *testing.T) {
		e := newTxnEnv(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_TIMEOUT_MS": "5000"})
		k := dial(t, e.addr)
		resp, _ := initTxn(t, k, "tx", 5001)
		require.Equal(t, kerr.InvalidTransactionTimeout.Code, resp.ErrorCode)
		resp, _ = initTxn(t, k, "tx", 5000)
		require.Equal(t, int16(0), resp.ErrorCode)
	})
	t.Run("partitions", func(t *testing.T) {
		e := newTxnEnv(t, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "256"})
		e.createTopic("out")
		k := dial(t, e.addr)
		x := mustInitTxn(t, k, "tx")
		var parts []int32
		for p := range int32(200) {
			parts = append(parts, p)
		}
		x.mustAdd(k, "out", parts...)
		require.Equal(t, []int16{kerr.MessageTooLarge.Code}, x.add(k, "out", 200), "the 201st partition")
		require.Equal(t, int16(0), x.end(k, false))
		next(t, e, k, x, "out")
	})
	t.Run("offsets", func(t *testing.T) {
		e := newTxnEnv(t, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "64"})
		e.createTopic("in")
		e.createTopic("out")
		k := dial(t, e.addr)
		x := mustInitTxn(t, k, "tx")
		offs := map[int32]int64{}
		for p := range int32(62) {
			offs[p] = 1
		}
		for p, c := range x.commitOffsets(k, "g", "", -1, "in", offs) {
			require.Equal(t, int16(0), c, "offset %d of 62", p)
		}
		require.Equal(t, map[int32]int16{62: kerr.InvalidCommitOffsetSize.Code}, x.commitOffsets(k, "g", "", -1, "in", map[int32]int64{62: 1}))
		require.Equal(t, int16(0), x.end(k, false))
		next(t, e, k, x, "out")
	})
}

// The one-second sweep (driven here by the node's clock) expires a
// transaction past its own timeout: nothing of it is written and its
// commit is refused; the producer aborts and goes on.
func TestTxnSweepExpiresAnOpenTransaction(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("out")
	k := dial(t, e.addr)
	_, x := initTxn(t, k, "tx", 10_000)
	x.mustAdd(k, "out", 0)
	x.mustProduce(k, "out", 0, "expires")
	e.clock.Advance(10 * time.Second)
	require.Equal(t, 1, e.n.txns.Sweep())
	require.Equal(t, int64(0), e.n.txns.Staged())
	require.Equal(t, kerr.InvalidTxnState.Code, x.end(k, true), "commit of an expired transaction")
	_, hw := e.values("out", 0)
	require.Equal(t, int64(0), hw, "an expired transaction wrote")
	require.Equal(t, int16(0), x.end(k, false))
	x.mustAdd(k, "out", 0)
	x.mustProduce(k, "out", 0, "next")
	require.Equal(t, int16(0), x.end(k, true))
	v, _ := e.values("out", 0)
	require.Equal(t, []string{"next"}, v)
}

// franz-go's transactional producer end to end against a served node:
// initTransactions, produce, commit; a second transaction aborted; a
// read_committed consumer sees exactly the committed records.
func TestTxnKgoSmoke(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("kgo-txn")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.TransactionalID("kgo-tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	require.NoError(t, err)
	defer p.Close()
	produce := func(commit bool, values ...string) {
		t.Helper()
		require.NoError(t, p.BeginTransaction())
		for _, v := range values {
			require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "kgo-txn", Partition: 0, Value: []byte(v)}).FirstErr())
		}
		require.NoError(t, p.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
	}
	produce(true, "c1", "c2", "c3")
	produce(false, "x1", "x2")
	produce(true, "c4")
	v, hw := e.values("kgo-txn", 0)
	require.Equal(t, []string{"c1", "c2", "c3", "c4"}, v)
	require.Equal(t, int64(4), hw)

	c, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kgo-txn": {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer c.Close()
	var got []string
	for len(got) < 4 && ctx.Err() == nil {
		fs := c.PollFetches(ctx)
		require.Empty(t, fs.Errors())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%s@%d", r.Value, r.Offset)) })
	}
	require.Equal(t, []string{"c1@0", "c2@1", "c3@2", "c4@3"}, got)
}

// A TxnOffsetCommit to a topic created natively in Queen (or through
// another facade) after this node's catalogue was loaded is staged at
// once, as OffsetCommit's is (issue 20 item 6).
func TestTxnOffsetCommitToTopicCreatedElsewhere(t *testing.T) {
	e := newTxnEnv(t, nil)
	k := dial(t, e.addr)
	x := mustInitTxn(t, k, "tx")
	require.Equal(t, int16(0), x.addOffsets(k, "billing"))
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	k.roundTrip(md) // the catalogue is loaded
	e.createTopic("native")
	require.Equal(t, map[int32]int16{0: 0}, x.commitOffsets(k, "billing", "", -1, "native", map[int32]int64{0: 5}))
	require.Equal(t, int16(0), x.end(k, true))
}
