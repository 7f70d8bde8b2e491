package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestTxnFencing: two franz-go producers with one transactional id. The
// second's InitProducerId keeps the producer id and bumps the epoch; from
// then on the first is fenced: its produce is refused PRODUCER_FENCED or
// INVALID_PRODUCER_EPOCH (Kafka's partition leader answers the latter), its
// commit fails, and EndTxn with its epoch is PRODUCER_FENCED at v2 and
// above and INVALID_PRODUCER_EPOCH below, the mapping Kafka applies for
// clients that predate PRODUCER_FENCED. Nothing of its open transaction is
// ever written; the second producer's transaction lands.
func TestTxnFencing(t *testing.T) {
	t.Parallel()
	dev, fac := sharedEnv(t)
	seeds := []string{fac.addr}
	topic, id := uniq("txn-fence"), uniq("tid-fence")
	createTopic(t, target{seeds, dev}, topic, 1, nil)
	ctx := ctxT(t, 60*time.Second)

	a := newTxnKgo(t, seeds, id)
	require.NoError(t, a.BeginTransaction())
	txnValues(t, a, topic, 0, "a1", "a2")
	pidA, epochA, err := a.ProducerID(ctx)
	require.NoError(t, err)

	b := newTxnKgo(t, seeds, id)
	pidB, epochB, err := b.ProducerID(ctx)
	require.NoError(t, err, "the second producer's InitProducerId")
	assert.Equal(t, pidA, pidB, "a transactional id keeps its producer id")
	assert.Greater(t, epochB, epochA, "the second InitProducerId bumps the epoch")

	err = a.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("a3")}).FirstErr()
	assert.True(t, isOneOf(err, kerr.ProducerFenced, kerr.InvalidProducerEpoch), "the fenced producer's produce: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	if err := a.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Errorf("the fenced producer's commit succeeded")
	} else {
		t.Logf("the fenced producer's commit: %v", err)
	}
	// The same EndTxn on the wire, from a connection of its own, at the
	// version franz-go negotiates and at v1.
	assert.Equal(t, kerr.ProducerFenced.Code, endTxnCode(t, newKgo(t, seeds), id, pidA, epochA, true), "EndTxn v3 with the fenced epoch")
	v1 := kversion.Stable()
	v1.SetMaxKeyVersion(kmsg.EndTxn.Int16(), 1)
	assert.Equal(t, kerr.InvalidProducerEpoch.Code, endTxnCode(t, newKgo(t, seeds, kgo.MaxVersions(v1)), id, pidA, epochA, true), "EndTxn v1 with the fenced epoch")

	assert.Equal(t, map[int32]int64{0: 0}, endOffsets(t, seeds, topic), "the fenced transaction wrote something")

	commitValues(t, b, topic, 0, "b1", "b2")
	assert.Equal(t, []string{"b1", "b2"}, valuesOf(readToEnd(t, seeds, topic, kgo.ReadCommitted())))
	assert.Equal(t, []string{"b1", "b2"}, storedValues(t, dev, topic, 0), "what Queen holds")
}

// TestTxnTimeoutSweep: a transaction left open past its own
// transaction.timeout.ms is aborted by the facade's sweep, without the
// producer doing anything. The process may stage 32 KiB
// (QUEEN_KAFKA_TXN_MAX_STAGED_BYTES), so the sweep is observable as the
// expired transaction's 16 KiB coming free: another transactional id's
// 20 KiB is refused MESSAGE_TOO_LARGE beside it, and staged once the sweep
// has run. The expired producer's commit then fails with what Kafka sends
// for a transaction its coordinator aborted (PRODUCER_FENCED or
// INVALID_PRODUCER_EPOCH after the epoch bump, INVALID_TXN_STATE for a
// stage that is gone), nothing of it is written, and the transactional id
// works again for a new producer.
func TestTxnTimeoutSweep(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	fac := startFacade(t, dev, map[string]string{"QUEEN_KAFKA_TXN_MAX_BYTES": "32768", "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES": "32768"})
	seeds := []string{fac.addr}
	topic, id := uniq("txn-sweep"), uniq("tid-sweep")
	createTopic(t, target{seeds, dev}, topic, 1, nil)
	ctx := ctxT(t, 60*time.Second)

	p := newTxnKgo(t, seeds, id, kgo.TransactionTimeout(1500*time.Millisecond))
	require.NoError(t, p.BeginTransaction())
	n, err := stageUntilRefused(t, p, topic, 4096, 4)
	require.NoError(t, err, "16 KiB staged by the transaction that will expire")
	require.Equal(t, 4, n)
	opened := time.Now()

	raw := newKgo(t, seeds)
	br := leader(t, raw, topic)
	other := initRawTxn(t, raw, uniq("tid-sweep-other"), 60000)
	big := make([]string, 5)
	for i := range big {
		big[i] = strings.Repeat("o", 4096)
	}
	// stageOther opens a transaction of the other id and stages 20 KiB in
	// it; a refused one is aborted, so the next try starts afresh.
	stageOther := func() int16 {
		other.mustAddPartitions(raw, topic, 0)
		code, _ := other.produce(br, topic, 0, big...)
		if code != 0 {
			require.Equal(t, int16(0), other.end(raw, false), "abort of the refused transaction")
		}
		return code
	}
	require.Equal(t, kerr.MessageTooLarge.Code, stageOther(), "20 KiB beside the open transaction's 16 KiB under a 32 KiB process budget")
	eventually(t, 20*time.Second, "the expired transaction's staged bytes freed by the sweep", func() (bool, string) {
		c := stageOther()
		return c == 0, codeName(c)
	})
	t.Logf("staged bytes free %.1fs after the transaction opened (timeout 1.5s, sweep 1s)", time.Since(opened).Seconds())
	assert.Equal(t, int16(0), other.end(raw, false), "abort of the other transaction")

	err = p.EndTransaction(ctx, kgo.TryCommit)
	assert.True(t, isOneOf(err, kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidTxnState),
		"commit of the expired transaction: %v, want PRODUCER_FENCED, INVALID_PRODUCER_EPOCH or INVALID_TXN_STATE", err)
	assert.Equal(t, map[int32]int64{0: 0}, endOffsets(t, seeds, topic), "the expired or aborted transactions wrote something")
	assert.Empty(t, storedValues(t, dev, topic, 0), "what Queen holds")

	q := newTxnKgo(t, seeds, id)
	commitValues(t, q, topic, 0, "y1")
	assert.Equal(t, []string{"y1"}, valuesOf(readToEnd(t, seeds, topic, kgo.ReadCommitted())))
}

// TestTxnFacadeRestart: a stage is the facade's memory. Begin, produce,
// kill -9 and restart the facade, and the client's commit is answered
// INVALID_TXN_STATE with nothing written (seed 001). The transactional id
// survives in Queen: a new producer with it gets the same producer id at a
// later epoch, and its transaction lands.
func TestTxnFacadeRestart(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	fac := startFacade(t, dev, nil)
	seeds := []string{fac.addr}
	topic, id := uniq("txn-restart"), uniq("tid-restart")
	createTopic(t, target{seeds, dev}, topic, 1, nil)
	ctx := ctxT(t, 60*time.Second)

	p := newTxnKgo(t, seeds, id, kgo.RetryTimeout(30*time.Second))
	require.NoError(t, p.BeginTransaction())
	txnValues(t, p, topic, 0, "r1", "r2", "r3")
	pid, epoch, err := p.ProducerID(ctx)
	require.NoError(t, err)

	fac.kill()
	require.NoError(t, fac.restart())

	err = p.EndTransaction(ctx, kgo.TryCommit)
	assert.ErrorIs(t, err, kerr.InvalidTxnState, "commit of a stage the restart lost")
	assert.Equal(t, map[int32]int64{0: 0}, endOffsets(t, seeds, topic), "the lost stage wrote something")
	assert.Empty(t, storedValues(t, dev, topic, 0), "what Queen holds")

	q := newTxnKgo(t, seeds, id)
	pid2, epoch2, err := q.ProducerID(ctx)
	require.NoError(t, err, "InitProducerId after the restart")
	assert.Equal(t, pid, pid2, "producer id across the restart")
	assert.Greater(t, epoch2, epoch, "epoch across the restart")
	commitValues(t, q, topic, 0, "n1", "n2")
	assert.Equal(t, []string{"n1", "n2"}, valuesOf(readToEnd(t, seeds, topic, kgo.ReadCommitted())))
}

// TestTxnResumedCommit: a stage outlives the connection that opened it. One
// client opens a transaction on the wire (InitProducerId, AddPartitionsToTxn,
// a transactional Produce answered base_offset -1 with nothing in the log)
// and closes; a fresh client's EndTxn(commit) with the first one's producer
// id and epoch lands the records, advancing the log by exactly their count.
func TestTxnResumedCommit(t *testing.T) {
	t.Parallel()
	dev, fac := sharedEnv(t)
	seeds := []string{fac.addr}
	topic, id := uniq("txn-resume"), uniq("tid-resume")
	createTopic(t, target{seeds, dev}, topic, 1, nil)

	first, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(20*time.Second))
	require.NoError(t, err)
	x := initRawTxn(t, first, id, 60000)
	x.mustAddPartitions(first, topic, 0)
	code, base := x.produce(leader(t, first, topic), topic, 0, "s1", "s2", "s3")
	require.Equal(t, int16(0), code, "transactional produce: %s", codeName(code))
	assert.Equal(t, int64(-1), base, "a transactional produce answers base_offset -1 (seed 001)")
	assert.Equal(t, map[int32]int64{0: 0}, endOffsets(t, seeds, topic), "records of an open transaction are in the log")
	first.Close()

	assert.Equal(t, int16(0), x.end(newKgo(t, seeds), true), "EndTxn(commit) from a new connection")
	assert.Equal(t, map[int32]int64{0: 3}, endOffsets(t, seeds, topic), "a committed transaction of 3 advances the log by 3")
	assert.Equal(t, []string{"s1", "s2", "s3"}, valuesOf(readToEnd(t, seeds, topic, kgo.ReadCommitted())))
}

// TestTxnIsolation: nothing uncommitted is ever in the log, so read_committed
// and read_uncommitted see the same records and ListOffsets answers the same
// at both levels (last stable offset = high watermark), while a transaction
// is open, after its commit and after an abort. A read_committed Fetch
// carries LSO = HWM and no aborted transactions.
func TestTxnIsolation(t *testing.T) {
	t.Parallel()
	dev, fac := sharedEnv(t)
	seeds := []string{fac.addr}
	topic, id := uniq("txn-iso"), uniq("tid-iso")
	createTopic(t, target{seeds, dev}, topic, 2, nil)
	both := func(when string, want map[int32]int64) {
		t.Helper()
		assert.Equal(t, want, endOffsets(t, seeds, topic), "%s: read_uncommitted end offsets", when)
		assert.Equal(t, want, listedOffsets(t, seeds, topic, true), "%s: read_committed end offsets", when)
	}

	p := newTxnKgo(t, seeds, id)
	require.NoError(t, p.BeginTransaction())
	txnValues(t, p, topic, 0, "c1", "c2", "c3")
	txnValues(t, p, topic, 1, "c4", "c5")
	both("transaction open", map[int32]int64{0: 0, 1: 0})
	commitTxn(t, p)
	both("after the commit", map[int32]int64{0: 3, 1: 2})

	require.NoError(t, p.BeginTransaction())
	txnValues(t, p, topic, 0, "x1")
	txnValues(t, p, topic, 1, "x2")
	abortTxn(t, p)
	both("after an abort", map[int32]int64{0: 3, 1: 2})

	type seen struct {
		p   int32
		off int64
		v   string
	}
	flat := func(rs []*kgo.Record) []seen {
		var out []seen
		for _, r := range rs {
			out = append(out, seen{r.Partition, r.Offset, string(r.Value)})
		}
		slices.SortFunc(out, func(a, b seen) int {
			if a.p != b.p {
				return int(a.p - b.p)
			}
			return int(a.off - b.off)
		})
		return out
	}
	committed := flat(readToEnd(t, seeds, topic, kgo.ReadCommitted()))
	uncommitted := flat(readToEnd(t, seeds, topic, kgo.ReadUncommitted()))
	assert.Equal(t, []seen{{0, 0, "c1"}, {0, 1, "c2"}, {0, 2, "c3"}, {1, 0, "c4"}, {1, 1, "c5"}}, committed, "read_committed")
	assert.Equal(t, committed, uncommitted, "read_uncommitted against read_committed")

	cl := newKgo(t, seeds)
	req := fetchP0(topic, 6, 0)
	req.IsolationLevel = 1
	resp, err := leader(t, cl, topic).Request(ctxT(t, 15*time.Second), req)
	require.NoError(t, err)
	fp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	assert.Equal(t, int16(0), fp.ErrorCode)
	assert.Equal(t, int64(3), fp.HighWatermark)
	assert.Equal(t, fp.HighWatermark, fp.LastStableOffset, "read_committed Fetch: last stable offset")
	assert.Empty(t, fp.AbortedTransactions, "read_committed Fetch: aborted transactions")
}
