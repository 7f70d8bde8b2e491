package txn

import (
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
	pid, epoch := h.stageThree(keyedBatch)
	h.wire.loseTxn = errTransport
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit whose answer was lost: %v", kerr.ErrorForCode(c))
	}
	// The next transaction's fence expects the version the row showed.
	h.retryLandsOnce(pid, epoch, keyedBatch("tx", pid, epoch, "out", 3, "b", 1))

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
