package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// A transactional Produce across partitions is staged with one KV call at
// the node that received it, not one per partition (issue 23: every hop
// of a commit that is not its Queen transaction is cut), and the commit
// lands every batch.
func TestClusterTxnStagesARequestInOneCall(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("out", 3)
	id := groupOwnedBy(t, []int32{1, 2, 3}, 2, "txs")
	owner, other := e.k[1], e.k[0]
	x := mustInitTxn(t, owner, id)
	x.mustAdd(owner, "out", 0, 1, 2)
	x.mustProduce(other, "out", 0, "warm") // the row is cached at node 1 now

	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 30000, &id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "out"
	for p, v := range []string{"a", "b", "c"} {
		tp := topicPartition{"out", int32(p)}
		raw := batchtest.Batch{Attrs: recordbatch.AttrTransactional, Idem: true, PID: x.pid, Epoch: x.epoch, FirstSeq: x.seq[tp], FirstTS: 1, Records: []kmsg.Record{{Value: []byte(v)}}}.Encode(t)
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), raw
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	before := e.fq.count("POST /api/v1/kv")
	resp := other.roundTrip(req).(*kmsg.ProduceResponse)
	for _, rp := range resp.Topics[0].Partitions {
		require.Equal(t, int16(0), rp.ErrorCode, "partition %d", rp.Partition)
	}
	require.Equal(t, 1, e.fq.count("POST /api/v1/kv")-before, "KV calls to stage one request of three partitions")

	require.Equal(t, int16(0), x.end(owner, true))
	require.Equal(t, []string{"warm", "a"}, e.values(t, "out", 0))
	require.Equal(t, []string{"b"}, e.values(t, "out", 1))
	require.Equal(t, []string{"c"}, e.values(t, "out", 2))
}

// An EndTxn v5 at the owner of a transaction a partition leader opened
// (KIP-890's implicit add) reads the row and the stage in one KV call,
// then commits: one KV round trip before the Queen transaction, not two.
func TestClusterTxnV2CommitReadsRowAndStageInOneCall(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("out", 6)
	id := groupOwnedBy(t, []int32{1, 2, 3}, 1, "tv2c")
	owner, leader := e.k[0], e.k[1]
	x := mustInitTxn(t, owner, id)
	require.Equal(t, int16(0), x.produceV(leader, 12, 0, "out", 0, 0, "a", "b"), "Produce v12 opens the transaction")
	kv, txn := len(e.fq.rec.Bodies("POST /api/v1/kv")), e.fq.count("POST /api/v1/transaction")
	code, _, epoch := x.endV5(owner, x.pid, 0, true)
	require.Equal(t, int16(0), code)
	require.Equal(t, int16(1), epoch)
	require.Equal(t, 1, e.fq.count("POST /api/v1/transaction")-txn)
	// The transaction's calls only: a registry heartbeat may land in the
	// window; and not the stage's cleanup, which runs after the answer.
	reads := 0
	for _, b := range e.fq.rec.Bodies("POST /api/v1/kv")[kv:] {
		if strings.Contains(fmt.Sprint(b), id) && !stageCleanup(b) {
			reads++
		}
	}
	require.Equal(t, 1, reads, "KV calls of the commit before its Queen transaction")
	require.Equal(t, []string{"a", "b"}, e.values(t, "out", 0))
}

// stageCleanup tells a committed stage's cleanup among recorded KV bodies:
// it runs after the commit's answer, so it may land in any later window.
// It deletes the pending index's rows and puts the stage rows null with a
// ttl of a second (txn.cleanupOp).
func stageCleanup(body any) bool {
	s := fmt.Sprint(body)
	return strings.Contains(s, "delete") || strings.Contains(s, "ttlSeconds:1 ")
}

// A late EndTxn that reaches the owner while the next transaction is open
// (implicitly, at another node) reads that transaction's first stage page
// with its row; it must not keep it: records staged after it belong to the
// commit too. (A page kept until the commit lost "d": a lost write and a
// torn transaction, found by TestChaosTxnLateEndTxn.)
func TestClusterTxnLateEndTxnKeepsNoStalePage(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("out", 6)
	id := groupOwnedBy(t, []int32{1, 2, 3}, 1, "tv2late")
	owner, leader := e.k[0], e.k[1]
	x := mustInitTxn(t, owner, id)
	require.Equal(t, int16(0), x.produceV(leader, 12, 0, "out", 0, 0, "a", "b"))
	code, _, epoch := x.endV5(owner, x.pid, 0, true)
	require.Equal(t, int16(0), code)
	require.Equal(t, int16(1), epoch)
	require.Equal(t, int16(0), x.produceV(leader, 12, 1, "out", 0, 0, "c"), "Produce v12 opens the next transaction")
	code, _, _ = x.endV5(owner, x.pid, 0, true)
	require.NotEqual(t, int16(0), code, "a late retry of the first commit while the next is open is fenced")
	require.Equal(t, int16(0), x.produceV(leader, 12, 1, "out", 0, 1, "d"))
	code, _, epoch = x.endV5(owner, x.pid, 1, true)
	require.Equal(t, int16(0), code)
	require.Equal(t, int16(2), epoch)
	require.Equal(t, []string{"a", "b", "c", "d"}, e.values(t, "out", 0))
}

// A Produce v12 at a leader whose cached row names the transaction its
// owner decided since (KIP-890: the epoch moved) reads the row afresh once
// and then opens the next transaction in the very call that stages the
// request's batches: two KV calls for a request of three partitions,
// where a read per partition and opening in calls of its own (a second
// read and the compare-and-set) took six.
func TestClusterTxnV2ImplicitOpenRidesTheStagingWrite(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("out", 6)
	id := groupOwnedBy(t, []int32{1, 2, 3}, 1, "tv2open")
	owner, leader := e.k[0], e.k[1]
	x := mustInitTxn(t, owner, id)
	require.Equal(t, int16(0), x.produceV(leader, 12, 0, "out", 0, 0, "a"))
	code, _, epoch := x.endV5(owner, x.pid, 0, true)
	require.Equal(t, int16(0), code)
	require.Equal(t, int16(1), epoch)
	calls := func() (n int) { // this id's, but the commit's stage cleanup (asynchronous)
		for _, b := range e.fq.rec.Bodies("POST /api/v1/kv") {
			if strings.Contains(fmt.Sprint(b), id) && !stageCleanup(b) {
				n++
			}
		}
		return n
	}

	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 12, -1, 30000, &id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "out"
	for p, v := range []string{"b", "c", "d"} {
		raw := batchtest.Batch{Attrs: recordbatch.AttrTransactional, Idem: true, PID: x.pid, Epoch: 1, FirstSeq: 0, FirstTS: 1, Records: []kmsg.Record{{Value: []byte(v)}}}.Encode(t)
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), raw
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	before := calls()
	resp := leader.roundTrip(req).(*kmsg.ProduceResponse)
	for _, rp := range resp.Topics[0].Partitions {
		require.Equal(t, int16(0), rp.ErrorCode, "partition %d: Produce v12 opens the next transaction", rp.Partition)
	}
	require.Equal(t, 2, calls()-before, "KV calls of the leader's Produce that opens the transaction")

	require.Equal(t, int16(0), x.produceV(e.k[2], 12, 1, "out", 3, 0, "e"), "another leader stages into the open transaction")
	code, _, epoch = x.endV5(owner, x.pid, 1, true)
	require.Equal(t, int16(0), code)
	require.Equal(t, int16(2), epoch)
	require.Equal(t, []string{"a", "b"}, e.values(t, "out", 0))
	require.Equal(t, []string{"c"}, e.values(t, "out", 1))
	require.Equal(t, []string{"d"}, e.values(t, "out", 2))
	require.Equal(t, []string{"e"}, e.values(t, "out", 3))
}
