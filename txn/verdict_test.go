package txn

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen/dev"
)

// A commit whose answer was lost is retried; Queen applies the kv rider
// first (§8), so the retry's fence (expecting the old version) is lost with
// kv_precondition. The verdict's value and version may be null (§7.4): the
// retry recognises its own landed commit from the row itself and answers 0,
// with the records and offsets stored once and the next transaction fenced
// by the row's real version. A producer truly fenced behind such a verdict
// is still PRODUCER_FENCED.
func TestRetriedCommitLandsBehindABareVerdict(t *testing.T) {
	h := newHarnessOn(t, Limits{}, dev.Options{BareVerdicts: true})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, keyedBatch("tx", pid, epoch, "out", 0, "a", 3))
	h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "g", "in", map[int32]int64{0: 5}), served)
	h.wire.loseTxn = errTransport
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit whose answer was lost: %v", kerr.ErrorForCode(c))
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("retried commit that landed: %v, want 0", kerr.ErrorForCode(c))
	}
	if got, hw := h.values("out", 0); !slices.Equal(got, []string{"a-0", "a-1", "a-2"}) || hw != 3 {
		t.Fatalf("records after the retry: %v hw %d", got, hw)
	}
	if h.committed("g", "in", 0) != 5 {
		t.Fatal("offset not committed")
	}
	// The next transaction's fence expects the version the row showed.
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, keyedBatch("tx", pid, epoch, "out", 3, "b", 1))
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("next commit: %v", kerr.ErrorForCode(c))
	}

	// Fenced by another process: the row shows its claim, not this commit.
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, keyedBatch("tx", pid, epoch, "out", 4, "c", 1))
	if _, e := h.init(h.manager(Limits{}), h.cl, "tx"); e != epoch+1 {
		t.Fatalf("other process: epoch %d", e)
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.ProducerFenced.Code {
		t.Fatalf("commit behind a moved fence: %v", kerr.ErrorForCode(c))
	}
	if got, _ := h.values("out", 0); len(got) != 4 {
		t.Fatalf("a fenced commit wrote: %v", got)
	}
}
