package txn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
)

// keyedBatch is batch with its records' dedup keys, as the node stages
// them (issue 9).
func keyedBatch(id string, pid int64, epoch int16, topic string, first int32, tag string, n int) *Batch {
	b := batch(id, pid, epoch, topic, 0, tag, n)
	b.Keys = producer.DedupKeys(pid, epoch, first, n)
	return b
}

// A transaction's records are committed with their dedup keys. A commit
// rolled back as duplicate (a broker that checks the records before the
// fence, answering the retry of a commit that landed) is answered 0 when
// the qk:txn: row shows this very commit landed, and stays retriable,
// with nothing written, when it does not.
func TestCommitDedupKeys(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, keyedBatch("tx", pid, epoch, "out", 0, "a", 2))
	h.wire.loseTxn = errTransport
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit whose answer was lost: %v", kerr.ErrorForCode(c))
	}
	h.wire.failTxn = &queen.TxnError{Reason: queen.TxnReasonDuplicate, Message: "duplicate transactionId"}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("retried commit answered duplicate: %v, want 0 (the row shows it landed)", kerr.ErrorForCode(c))
	}
	res, err := h.q.Fetch(context.Background(), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "out", Partition: "0"}}})
	require.NoError(t, err)
	require.Len(t, res[0].Records, 2, "stored once")
	require.Equal(t, producer.DedupKeys(pid, epoch, 0, 2), []string{res[0].Records[0].TransactionID, res[0].Records[1].TransactionID})

	// The next transaction: a duplicate rollback the row does not explain.
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, keyedBatch("tx", pid, epoch, "out", 2, "b", 1))
	h.wire.failTxn = &queen.TxnError{Reason: queen.TxnReasonDuplicate}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("unexplained duplicate: %v, want COORDINATOR_NOT_AVAILABLE with the stage kept", kerr.ErrorForCode(c))
	}
	if vals, _ := h.values("out", 0); len(vals) != 2 {
		t.Fatalf("the rolled-back commit wrote: %v", vals)
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("retried commit: %v", kerr.ErrorForCode(c))
	}
	if vals, _ := h.values("out", 0); len(vals) != 3 {
		t.Fatalf("after the retry: %v, want 3 records", vals)
	}
}
