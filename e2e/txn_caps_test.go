package e2e

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// stageUntilRefused produces records of size bytes one at a time into cl's
// open transaction until one is refused or limit were accepted, and returns
// how many were accepted and the refusal.
func stageUntilRefused(t testing.TB, cl *kgo.Client, topic string, size, limit int) (int, error) {
	t.Helper()
	v := bytes.Repeat([]byte("s"), size)
	for i := 0; i < limit; i++ {
		if err := cl.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Topic: topic, Partition: 0, Value: v}).FirstErr(); err != nil {
			return i, err
		}
	}
	return limit, nil
}

// TestTxnCaps: each of seed 000's transaction caps, on a facade of its own
// with the cap made small, and the two derived ones (200 partitions, 62
// offsets) at their fixed values. Past a cap the transaction is refused
// with the code seed 001 names, MESSAGE_TOO_LARGE or, for offsets,
// INVALID_COMMIT_OFFSET_SIZE (INVALID_TRANSACTION_TIMEOUT for a timeout
// above the ceiling, as Kafka's transaction.max.timeout.ms does); the
// producer aborts and carries on, and nothing of the refused transaction is
// stored.
func TestTxnCaps(t *testing.T) {
	dev, _ := sharedEnv(t)
	// capFacade is a facade with env, a one-partition topic on it and its
	// address.
	capFacade := func(t *testing.T, env map[string]string, parts int32) (string, []string) {
		fac := startFacade(t, dev, env)
		seeds := []string{fac.addr}
		topic := uniq("txn-cap")
		createTopic(t, target{seeds, dev}, topic, parts, nil)
		return topic, seeds
	}

	// The records cap is exact: 10 staged, the 11th refused. The same
	// producer aborts and its next transaction, on the same partition and
	// its sequence, lands.
	t.Run("max-records", func(t *testing.T) {
		t.Parallel()
		topic, seeds := capFacade(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_RECORDS": "10"}, 1)
		p := newTxnKgo(t, seeds, uniq("tid-cap-records"))
		require.NoError(t, p.BeginTransaction())
		n, err := stageUntilRefused(t, p, topic, 16, 11)
		assert.Equal(t, 10, n, "records staged before the refusal")
		assert.ErrorIs(t, err, kerr.MessageTooLarge, "the 11th record")
		abortTxn(t, p)
		assert.Equal(t, map[int32]int64{0: 0}, endOffsets(t, seeds, topic), "the refused transaction wrote something")
		commitValues(t, p, topic, 0, "after-1", "after-2", "after-3")
		assert.Equal(t, []string{"after-1", "after-2", "after-3"}, storedValues(t, dev, topic, 0))
	})

	// The bytes cap counts staged record bytes, whatever their encoding
	// costs: 8 records of 1 KiB fit 16 KiB, 17 do not.
	t.Run("max-bytes", func(t *testing.T) {
		t.Parallel()
		topic, seeds := capFacade(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_BYTES": "16384"}, 1)
		p := newTxnKgo(t, seeds, uniq("tid-cap-bytes"))
		require.NoError(t, p.BeginTransaction())
		n, err := stageUntilRefused(t, p, topic, 1024, 40)
		assert.ErrorIs(t, err, kerr.MessageTooLarge, "a transaction past 16 KiB")
		assert.True(t, n >= 8 && n <= 16, "%d records of 1 KiB staged before the refusal, want 8 to 16", n)
		abortTxn(t, p)
		assert.Equal(t, map[int32]int64{0: 0}, endOffsets(t, seeds, topic), "the refused transaction wrote something")
		commitValues(t, p, topic, 0, "small")
		assert.Equal(t, []string{"small"}, storedValues(t, dev, topic, 0))
	})

	// The process budget is shared: with 32 KiB staged by one transaction,
	// a second is refused by its 9th record of 4 KiB, and once the first
	// has ended the second stages those 9 in a new transaction and lands.
	t.Run("max-staged-bytes", func(t *testing.T) {
		t.Parallel()
		topic, seeds := capFacade(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_BYTES": "65536", "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES": "65536"}, 1)
		a := newTxnKgo(t, seeds, uniq("tid-cap-staged-a"))
		require.NoError(t, a.BeginTransaction())
		n, err := stageUntilRefused(t, a, topic, 4096, 8)
		require.NoError(t, err, "the first transaction's 32 KiB")
		require.Equal(t, 8, n)
		b := newTxnKgo(t, seeds, uniq("tid-cap-staged-b"))
		require.NoError(t, b.BeginTransaction())
		n, err = stageUntilRefused(t, b, topic, 4096, 16)
		assert.ErrorIs(t, err, kerr.MessageTooLarge, "the second transaction past the process budget")
		assert.LessOrEqual(t, n, 8, "records of 4 KiB the second transaction staged beside 32 KiB")
		abortTxn(t, b)
		abortTxn(t, a)
		assert.Equal(t, map[int32]int64{0: 0}, endOffsets(t, seeds, topic), "the refused transactions wrote something")
		require.NoError(t, b.BeginTransaction())
		n, err = stageUntilRefused(t, b, topic, 4096, 9)
		require.NoError(t, err, "9 records of 4 KiB alone under a 64 KiB budget")
		commitTxn(t, b)
		assert.Equal(t, map[int32]int64{0: int64(n)}, endOffsets(t, seeds, topic))
	})

	// One open transaction at a time: a second transactional id is refused
	// when it opens a transaction (AddPartitionsToTxn), and once the first
	// has ended it opens one and commits. Its abort of the refused attempt
	// is answered as Kafka answers an abort of a transaction that may not
	// have begun: NONE or INVALID_TXN_STATE.
	t.Run("max-open", func(t *testing.T) {
		t.Parallel()
		topic, seeds := capFacade(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_OPEN": "1"}, 1)
		cl := newKgo(t, seeds)
		br := leader(t, cl, topic)
		a := initRawTxn(t, cl, uniq("tid-cap-open-a"), 60000)
		a.mustAddPartitions(cl, topic, 0)
		code, _ := a.produce(br, topic, 0, "a1")
		require.Equal(t, int16(0), code, "first transaction's produce: %s", codeName(code))
		b := initRawTxn(t, cl, uniq("tid-cap-open-b"), 60000)
		assert.Equal(t, kerr.MessageTooLarge.Code, b.addPartitions(cl, topic, 0)[0], "a second open transaction")
		code = b.end(cl, false)
		assert.Contains(t, []int16{0, kerr.InvalidTxnState.Code}, code, "abort of the refused transaction: %s", codeName(code))
		assert.Equal(t, int16(0), a.end(cl, false), "abort of the first")
		assert.Equal(t, map[int32]int64{0: 0}, endOffsets(t, seeds, topic), "the aborted transaction wrote something")
		b.mustAddPartitions(cl, topic, 0)
		code, _ = b.produce(br, topic, 0, "b1")
		require.Equal(t, int16(0), code, "second transaction's produce: %s", codeName(code))
		assert.Equal(t, int16(0), b.end(cl, true), "commit of the second")
		assert.Equal(t, []string{"b1"}, storedValues(t, dev, topic, 0))
	})

	// A transaction timeout above QUEEN_KAFKA_TXN_MAX_TIMEOUT_MS is refused
	// at InitProducerId; one at the ceiling is granted and its transaction
	// lands.
	t.Run("max-timeout", func(t *testing.T) {
		t.Parallel()
		topic, seeds := capFacade(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_TIMEOUT_MS": "5000"}, 1)
		id := uniq("tid-cap-timeout")
		cl := newKgo(t, seeds)
		code, _ := initRawTxnCode(t, cl, id, 5001)
		assert.Equal(t, kerr.InvalidTransactionTimeout.Code, code, "InitProducerId with 5001 ms over a 5000 ms ceiling: %s", codeName(code))
		p := newTxnKgo(t, seeds, id, kgo.TransactionTimeout(6*time.Second))
		_, _, err := p.ProducerID(ctxT(t, 20*time.Second))
		assert.ErrorIs(t, err, kerr.InvalidTransactionTimeout, "franz-go with transaction.timeout.ms 6000")
		assert.Equal(t, map[int32]int64{0: 0}, endOffsets(t, seeds, topic))

		q := newTxnKgo(t, seeds, id, kgo.TransactionTimeout(5*time.Second))
		commitValues(t, q, topic, 0, "at-the-ceiling")
		assert.Equal(t, []string{"at-the-ceiling"}, storedValues(t, dev, topic, 0))
	})

	// 200 partitions in one transaction, the 201st refused; a request of
	// 201 is refused whole, as Kafka's AddPartitionsToTxn adds all of a
	// request or none (OPERATION_NOT_ATTEMPTED beside the refused ones).
	t.Run("partitions-200", func(t *testing.T) {
		t.Parallel()
		topic, seeds := capFacade(t, nil, 201)
		cl := newKgo(t, seeds)
		br := leader(t, cl, topic)
		x := initRawTxn(t, cl, uniq("tid-cap-parts"), 60000)
		all := make([]int32, 201)
		for i := range all {
			all[i] = int32(i)
		}
		x.mustAddPartitions(cl, topic, all[:200]...)
		code, _ := x.produce(br, topic, 0, "refused")
		require.Equal(t, int16(0), code, "produce into the 200-partition transaction: %s", codeName(code))
		assert.Equal(t, map[int32]int16{200: kerr.MessageTooLarge.Code}, x.addPartitions(cl, topic, 200), "the 201st partition")
		assert.Equal(t, int16(0), x.end(cl, false), "abort")

		var refused int
		for p, code := range x.addPartitions(cl, topic, all...) {
			switch code {
			case kerr.MessageTooLarge.Code:
				refused++
			case kerr.OperationNotAttempted.Code:
			default:
				t.Errorf("201 partitions in one request: partition %d answered %s", p, codeName(code))
			}
		}
		assert.Positive(t, refused, "partitions of the 201 answered MESSAGE_TOO_LARGE")
		code = x.end(cl, false)
		assert.Contains(t, []int16{0, kerr.InvalidTxnState.Code}, code, "abort after a refused AddPartitionsToTxn: %s", codeName(code))

		x.mustAddPartitions(cl, topic, 0, 200)
		for _, p := range []int32{0, 200} {
			code, _ := x.produce(br, topic, p, fmt.Sprintf("ok-%d", p))
			require.Equal(t, int16(0), code, "produce to partition %d: %s", p, codeName(code))
		}
		assert.Equal(t, int16(0), x.end(cl, true), "commit")
		ends := endOffsets(t, seeds, topic)
		assert.Equal(t, int64(2), sumOffsets(ends), "records stored over the 201 partitions: %v", ends)
		assert.Equal(t, []string{"ok-0"}, storedValues(t, dev, topic, 0))
		assert.Equal(t, []string{"ok-200"}, storedValues(t, dev, topic, 200))
	})

	// 62 offsets in one transaction: a TxnOffsetCommit of 63 is refused
	// INVALID_COMMIT_OFFSET_SIZE (the rest of it OPERATION_NOT_ATTEMPTED at
	// most), and so is a 63rd after 62; neither
	// aborted transaction's offsets are committed, and a transaction of two
	// offsets and a record commits both.
	t.Run("offsets-62", func(t *testing.T) {
		t.Parallel()
		topic, seeds := capFacade(t, nil, 64)
		group := uniq("g-cap-offsets")
		cl := newKgo(t, seeds)
		x := initRawTxn(t, cl, uniq("tid-cap-offsets"), 60000)
		upTo := func(n int) map[int32]int64 {
			m := map[int32]int64{}
			for p := int32(0); p < int32(n); p++ {
				m[p] = 1
			}
			return m
		}
		require.Equal(t, int16(0), x.addOffsets(cl, group))
		var refused int
		for p, code := range x.commitOffsets(cl, group, topic, upTo(63)) {
			switch code {
			case kerr.InvalidCommitOffsetSize.Code:
				refused++
			case kerr.OperationNotAttempted.Code:
			default:
				t.Errorf("63 offsets in one request: partition %d answered %s", p, codeName(code))
			}
		}
		assert.Positive(t, refused, "offsets of the 63 answered INVALID_COMMIT_OFFSET_SIZE")
		assert.Equal(t, int16(0), x.end(cl, false), "abort")

		require.Equal(t, int16(0), x.addOffsets(cl, group))
		for p, code := range x.commitOffsets(cl, group, topic, upTo(62)) {
			assert.Equal(t, int16(0), code, "62 offsets: partition %d answered %s", p, codeName(code))
		}
		assert.Equal(t, map[int32]int16{62: kerr.InvalidCommitOffsetSize.Code}, x.commitOffsets(cl, group, topic, map[int32]int64{62: 1}), "the 63rd offset")
		assert.Equal(t, int16(0), x.end(cl, false), "abort")

		require.Equal(t, int16(0), x.addOffsets(cl, group))
		for p, code := range x.commitOffsets(cl, group, topic, map[int32]int64{0: 5, 1: 7}) {
			assert.Equal(t, int16(0), code, "partition %d: %s", p, codeName(code))
		}
		x.mustAddPartitions(cl, topic, 0)
		code, _ := x.produce(leader(t, cl, topic), topic, 0, "with-offsets")
		require.Equal(t, int16(0), code, "produce: %s", codeName(code))
		assert.Equal(t, int16(0), x.end(cl, true), "commit")
		assertCommitted(t, target{seeds, dev}, group, topic, map[int32]int64{0: 5, 1: 7})
		assert.Equal(t, []string{"with-offsets"}, storedValues(t, dev, topic, 0))
	})
}
