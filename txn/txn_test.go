package txn

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen"
)

var bg = context.Background()

// A committed transaction lands its records and its offsets in one call:
// the log end offset moves by exactly the records staged, the offsets are
// in the store, and the row says committed.
func TestCommitLandsRecordsAndOffsetsTogether(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0, 1)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 3))
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 1, "b", 2))
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "c", 1))
	if c := h.m.AddOffsetsToTxn(bg, h.cl, addOffsets("tx", pid, epoch, "billing")).ErrorCode; c != 0 {
		t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(c))
	}
	for _, c := range offsetCodes(h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "billing", "in", map[int32]int64{0: 18, 1: 4}), served)) {
		if c != 0 {
			t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(c))
		}
	}
	// Nothing is written before EndTxn.
	if got, hw := h.values("out", 0); len(got) != 0 || hw != 0 {
		t.Fatalf("records visible before the commit: %v (hw %d)", got, hw)
	}
	if h.committed("billing", "in", 0) != -1 {
		t.Fatal("offset visible before the commit")
	}
	if h.m.Staged() != 6*3 {
		t.Fatalf("staged %d bytes, want 18", h.m.Staged())
	}

	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(c))
	}
	p0, hw0 := h.values("out", 0)
	p1, hw1 := h.values("out", 1)
	if !slices.Equal(p0, []string{"a-0", "a-1", "a-2", "c-0"}) || hw0 != 4 || !slices.Equal(p1, []string{"b-0", "b-1"}) || hw1 != 2 {
		t.Fatalf("committed records: %v (hw %d), %v (hw %d)", p0, hw0, p1, hw1)
	}
	if h.committed("billing", "in", 0) != 18 || h.committed("billing", "in", 1) != 4 {
		t.Fatal("offsets not committed with the records")
	}
	var idx struct {
		PT string `json:"pt"`
	}
	if h.row(queen.GroupIndexKey("billing"), &idx) == 0 || idx.PT != "consumer" {
		t.Fatalf("group index row: %+v", idx)
	}
	if mk := h.marker("tx"); mk.State != rowCommitted || mk.PID != pid || mk.Epoch != epoch || mk.Seq != 1 {
		t.Fatalf("row after commit: %+v", mk)
	}
	if h.m.Staged() != 0 {
		t.Fatalf("stage not freed: %d bytes", h.m.Staged())
	}
	if _, n := h.wire.calls(); n != 1 {
		t.Fatalf("%d transaction calls for one commit", n)
	}

	// The next transaction of the same producer commits behind the new
	// version, and a repeated commit of a decided one is answered 0.
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "d", 1))
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("second commit: %v", kerr.ErrorForCode(c))
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("repeated commit: %v", kerr.ErrorForCode(c))
	}
	if _, hw := h.values("out", 0); hw != 5 {
		t.Fatalf("hw %d after a second commit of one record, want 5", hw)
	}
}

// An abort writes no record: the log end offset does not move.
func TestAbortWritesNothing(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 5))
	if c := h.end(h.m, h.cl, "tx", pid, epoch, false); c != 0 {
		t.Fatalf("abort: %v", kerr.ErrorForCode(c))
	}
	if got, hw := h.values("out", 0); len(got) != 0 || hw != 0 {
		t.Fatalf("an aborted transaction wrote %v (hw %d)", got, hw)
	}
	if _, n := h.wire.calls(); n != 0 {
		t.Fatalf("an abort made %d transaction calls", n)
	}
	if mk := h.marker("tx"); mk.State != rowAborted || mk.Seq != 1 {
		t.Fatalf("row after abort: %+v", mk)
	}
	// A commit after the abort is not a commit of nothing.
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.InvalidTxnState.Code {
		t.Fatalf("commit after abort: %v", kerr.ErrorForCode(c))
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, false); c != 0 {
		t.Fatalf("repeated abort: %v", kerr.ErrorForCode(c))
	}
	// ...and the next transaction commits behind the abort's new version.
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "b", 2))
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("commit after an abort: %v", kerr.ErrorForCode(c))
	}
	if got, hw := h.values("out", 0); !slices.Equal(got, []string{"b-0", "b-1"}) || hw != 2 {
		t.Fatalf("records %v hw %d", got, hw)
	}
}

// The claim: a fresh id gets a fresh producer id at epoch 0; a second
// producer keeps the producer id and bumps the epoch, which fences the
// first on every API; a restart keeps the producer id at the next epoch.
func TestClaimFencesAndSurvivesRestart(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, e0 := h.init(h.m, h.cl, "tx")
	if pid != 7 || e0 != 0 {
		t.Fatalf("fresh claim: pid %d epoch %d", pid, e0)
	}
	if mk := h.marker("tx"); mk.PID != pid || mk.Epoch != 0 || mk.State != rowOpen {
		t.Fatalf("claimed row: %+v", mk)
	}
	// The old producer opens a transaction and stages records.
	h.add(h.m, h.cl, "tx", pid, e0, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, e0, "out", 0, "zombie", 3))

	second := Client{Owner: 2}
	pid2, e1 := h.init(h.m, second, "tx")
	if pid2 != pid || e1 != 1 {
		t.Fatalf("takeover: pid %d epoch %d, want %d 1", pid2, e1, pid)
	}
	if h.m.Staged() != 0 {
		t.Fatal("the fenced epoch's open transaction was not dropped")
	}
	// Fenced everywhere, with the code of the request's version.
	if code, _ := h.m.Produce(bg, h.cl, batch("tx", pid, e0, "out", 0, "z", 1)); code != kerr.ProducerFenced.Code {
		t.Fatalf("produce of a fenced epoch: %v", kerr.ErrorForCode(code))
	}
	r := addParts("tx", pid, e0, "out", 0)
	if got := addCodes(h.m.AddPartitionsToTxn(bg, h.cl, r, served)); got[0] != kerr.ProducerFenced.Code {
		t.Fatalf("AddPartitionsToTxn v3 fenced: %v", got)
	}
	r.Version = 1
	if got := addCodes(h.m.AddPartitionsToTxn(bg, h.cl, r, served)); got[0] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("AddPartitionsToTxn v1 fenced: %v", got)
	}
	ao := addOffsets("tx", pid, e0, "g")
	if c := h.m.AddOffsetsToTxn(bg, h.cl, ao).ErrorCode; c != kerr.ProducerFenced.Code {
		t.Fatalf("AddOffsetsToTxn fenced: %v", kerr.ErrorForCode(c))
	}
	oc := offsetCommit("tx", pid, e0, "g", "in", map[int32]int64{0: 1})
	if got := offsetCodes(h.m.TxnOffsetCommit(bg, h.cl, oc, served)); got[0] != kerr.ProducerFenced.Code {
		t.Fatalf("TxnOffsetCommit v3 fenced: %v", got)
	}
	oc.Version = 2
	if got := offsetCodes(h.m.TxnOffsetCommit(bg, h.cl, oc, served)); got[0] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TxnOffsetCommit v2 fenced: %v", got)
	}
	if c := h.end(h.m, h.cl, "tx", pid, e0, true); c != kerr.ProducerFenced.Code {
		t.Fatalf("EndTxn of a fenced epoch: %v", kerr.ErrorForCode(c))
	}
	end := endTxn("tx", pid, e0, true)
	end.Version = 1
	if c := h.m.EndTxn(bg, h.cl, end).ErrorCode; c != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("EndTxn v1 fenced: %v", kerr.ErrorForCode(c))
	}
	if got, hw := h.values("out", 0); len(got) != 0 || hw != 0 {
		t.Fatalf("the fenced producer wrote %v", got)
	}
	// An epoch never granted, and another producer id.
	if c := h.end(h.m, second, "tx", pid, e1+1, true); c != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("epoch ahead: %v", kerr.ErrorForCode(c))
	}
	if c := h.end(h.m, second, "tx", pid+100, e1, true); c != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("another producer id: %v", kerr.ErrorForCode(c))
	}

	// A restarted facade holds nothing: the row gives the producer id back
	// at the next epoch.
	restarted := h.manager(Limits{})
	pid3, e2 := h.init(restarted, h.cl, "tx")
	if pid3 != pid || e2 != 2 {
		t.Fatalf("after a restart: pid %d epoch %d, want %d 2", pid3, e2, pid)
	}
}

// Two processes claiming one id: the loser of the first compare-and-set
// bumps over the winner; losing twice in a row is CONCURRENT_TRANSACTIONS.
func TestClaimLostTwiceIsConcurrentTransactions(t *testing.T) {
	h := newHarness(t, Limits{})
	h.init(h.m, h.cl, "tx")
	other := h.manager(Limits{})
	// Every claim of the other process meets a row moved just before it.
	h.wire.before = func(ops []queen.KVOp) {
		if ops[0].Key != queen.TxnKey("tx") {
			return
		}
		h.wire.before = nil
		h.init(h.m, h.cl, "tx")
		h.wire.before = func([]queen.KVOp) {
			h.wire.before = nil
			h.init(h.m, h.cl, "tx")
		}
	}
	r := other.InitProducerID(bg, h.cl, initReq("tx", testTimeout))
	if r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("twice lost: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if other.Held() != 0 {
		t.Fatal("a failed claim left a binding behind")
	}
	// Losing once is a takeover.
	r = other.InitProducerID(bg, h.cl, initReq("tx", testTimeout))
	if r.ErrorCode != 0 || r.ProducerEpoch != 3 {
		t.Fatalf("takeover after the race: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
}

// A producer fenced by another PROCESS (another facade on the same Queen)
// still holds its stage here; its commit meets the moved fence at op 0 and
// writes nothing at all.
func TestCommitBehindAMovedFenceWritesNothing(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 4))
	h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "g", "in", map[int32]int64{0: 9}), served)

	other := h.manager(Limits{})
	if _, e := h.init(other, h.cl, "tx"); e != epoch+1 {
		t.Fatalf("other process: epoch %d", e)
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.ProducerFenced.Code {
		t.Fatalf("commit behind a moved fence: %v", kerr.ErrorForCode(c))
	}
	if got, hw := h.values("out", 0); len(got) != 0 || hw != 0 {
		t.Fatalf("a fenced commit wrote %v", got)
	}
	if h.committed("g", "in", 0) != -1 {
		t.Fatal("a fenced commit wrote an offset")
	}
	if h.m.Staged() != 0 {
		t.Fatal("a fenced commit kept its stage")
	}
	// Fenced from then on, whatever it sends.
	if got := addCodes(h.m.AddPartitionsToTxn(bg, h.cl, addParts("tx", pid, epoch, "out", 0), served)); got[0] != kerr.ProducerFenced.Code {
		t.Fatalf("after the fence: %v", got)
	}
}

// A commit that fails retriably keeps its stage, so the client's retry
// lands it, exactly once; one whose answer was lost after it landed is
// recognised as landed on the retry.
func TestRetriedCommitLandsOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(f *flakyQueen)
	}{
		{"failed before Queen", func(f *flakyQueen) { f.failTxn = errTransport }},
		{"answer lost after landing", func(f *flakyQueen) { f.loseTxn = errTransport }},
		{"throttled", func(f *flakyQueen) {
			f.failTxn = &queen.Error{Kind: queen.KindThrottled, Status: 429, Route: "POST /api/v1/transaction", RetryAfter: time.Second}
		}},
		{"server error", func(f *flakyQueen) {
			f.failTxn = &queen.Error{Kind: queen.KindServer, Status: 500, Route: "POST /api/v1/transaction"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Limits{})
			pid, epoch := h.stageThree(batch)
			tc.arm(h.wire)
			if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.CoordinatorNotAvailable.Code {
				t.Fatalf("failed commit: %v", kerr.ErrorForCode(c))
			}
			// While the outcome is in doubt nothing else is taken.
			if code, _ := h.m.Produce(bg, h.cl, batch("tx", pid, epoch, "out", 0, "x", 1)); code != kerr.InvalidTxnState.Code {
				t.Fatalf("produce while committing: %v", kerr.ErrorForCode(code))
			}
			if got := addCodes(h.m.AddPartitionsToTxn(bg, h.cl, addParts("tx", pid, epoch, "out", 1), served)); got[0] != kerr.ConcurrentTransactions.Code {
				t.Fatalf("AddPartitionsToTxn while committing: %v", got)
			}
			if c := h.end(h.m, h.cl, "tx", pid, epoch, false); c != kerr.InvalidTxnState.Code {
				t.Fatalf("abort while committing: %v", kerr.ErrorForCode(c))
			}
			// The next transaction is fenced by the version the retry learnt.
			h.retryLandsOnce(pid, epoch, batch("tx", pid, epoch, "out", 0, "b", 1))
		})
	}
}

// An auth refusal of the commit is fatal for the producer and not a
// success; a rollback for another reason than the fence is retriable.
func TestCommitRefusals(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 1))
	h.wire.failTxn = &queen.Error{Kind: queen.KindForbidden, Status: 403, Route: "POST /api/v1/transaction"}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("forbidden commit: %v", kerr.ErrorForCode(c))
	}
	h.wire.failTxn = &queen.TxnError{Reason: "db_error"}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("rolled back for db_error: %v", kerr.ErrorForCode(c))
	}
	if _, hw := h.values("out", 0); hw != 0 {
		t.Fatal("a refused commit wrote")
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("commit after the refusals: %v", kerr.ErrorForCode(c))
	}
}

// The state machine's refusals, with Kafka's codes.
func TestWrongStateRequests(t *testing.T) {
	h := newHarness(t, Limits{})
	// No binding: INVALID_TXN_STATE, except an abort, which is true.
	if got := addCodes(h.m.AddPartitionsToTxn(bg, h.cl, addParts("tx", 7, 0, "out", 0), served)); got[0] != kerr.InvalidTxnState.Code {
		t.Fatalf("unknown id: %v", got)
	}
	if c := h.end(h.m, h.cl, "tx", 7, 0, true); c != kerr.InvalidTxnState.Code {
		t.Fatalf("commit of an unknown id: %v", kerr.ErrorForCode(c))
	}
	if c := h.end(h.m, h.cl, "tx", 7, 0, false); c != 0 {
		t.Fatalf("abort of an unknown id: %v", kerr.ErrorForCode(c))
	}
	pid, epoch := h.init(h.m, h.cl, "tx")
	// Nothing begun: a commit or an abort is INVALID_TXN_STATE.
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.InvalidTxnState.Code {
		t.Fatalf("commit of nothing begun: %v", kerr.ErrorForCode(c))
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, false); c != kerr.InvalidTxnState.Code {
		t.Fatalf("abort of nothing begun: %v", kerr.ErrorForCode(c))
	}
	// A produce to a partition not added.
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	if code, _ := h.m.Produce(bg, h.cl, batch("tx", pid, epoch, "out", 1, "a", 1)); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce to a partition not added: %v", kerr.ErrorForCode(code))
	}
	// A partition not served refuses the request whole.
	r := addParts("tx", pid, epoch, "missing", 0)
	rt := r.Topics[0]
	rt.Topic, rt.Partitions = "out", []int32{2}
	r.Topics = append(r.Topics, rt)
	if got := addCodes(h.m.AddPartitionsToTxn(bg, h.cl, r, served)); !slices.Equal(got, []int16{kerr.UnknownTopicOrPartition.Code, kerr.OperationNotAttempted.Code}) {
		t.Fatalf("unserved partition: %v", got)
	}
	if code, _ := h.m.Produce(bg, h.cl, batch("tx", pid, epoch, "out", 2, "a", 1)); code != kerr.InvalidTxnState.Code {
		t.Fatal("a refused AddPartitionsToTxn added its other partitions")
	}
	// An empty transaction (partitions added, nothing staged) commits
	// without a call.
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("empty commit: %v", kerr.ErrorForCode(c))
	}
	if _, n := h.wire.calls(); n != 0 {
		t.Fatalf("an empty commit made %d calls", n)
	}
}

// Admit is Produce's verdict without staging: a fenced producer, a
// partition not added, a transaction in the wrong state.
func TestAdmit(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	if code, _ := h.m.Admit(h.cl, batch("tx", pid, epoch, "out", 0, "a", 1)); code != kerr.InvalidTxnState.Code {
		t.Fatalf("nothing added: %v", kerr.ErrorForCode(code))
	}
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	if code, _ := h.m.Admit(h.cl, batch("tx", pid, epoch, "out", 0, "a", 1)); code != 0 {
		t.Fatalf("added: %v", kerr.ErrorForCode(code))
	}
	if h.m.Staged() != 0 {
		t.Fatal("Admit staged")
	}
	h.init(h.m, Client{Owner: 2}, "tx")
	if code, _ := h.m.Admit(h.cl, batch("tx", pid, epoch, "out", 0, "a", 1)); code != kerr.ProducerFenced.Code {
		t.Fatalf("fenced: %v", kerr.ErrorForCode(code))
	}
}

// TxnOffsetCommit asks the group coordinator; a stale member is refused
// with its code and stages nothing.
func TestTxnOffsetCommitChecksTheGroup(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.groups.codes["stale"] = kerr.IllegalGeneration.Code
	h.groups.codes["bad"] = kerr.InvalidGroupID.Code
	if got := offsetCodes(h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "stale", "in", map[int32]int64{0: 1, 1: 2}), served)); !slices.Equal(got, []int16{kerr.IllegalGeneration.Code, kerr.IllegalGeneration.Code}) {
		t.Fatalf("stale generation: %v", got)
	}
	if c := h.m.AddOffsetsToTxn(bg, h.cl, addOffsets("tx", pid, epoch, "bad")).ErrorCode; c != kerr.InvalidGroupID.Code {
		t.Fatalf("AddOffsetsToTxn of a bad group: %v", kerr.ErrorForCode(c))
	}
	// A static member (group instance id) is the group's to judge as well:
	// TestTxnOffsetCommitOfAStaticMember.
	r := offsetCommit("tx", pid, epoch, "g", "missing", map[int32]int64{0: 1})
	if got := offsetCodes(h.m.TxnOffsetCommit(bg, h.cl, r, served)); got[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unserved partition: %v", got)
	}
	r = offsetCommit("tx", pid, epoch, "g", "__consumer_offsets", map[int32]int64{0: 1})
	if got := offsetCodes(h.m.TxnOffsetCommit(bg, h.cl, r, served)); got[0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("internal topic: %v", got)
	}
	// A re-commit of one partition is one write, the last.
	h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "g", "in", map[int32]int64{0: 3}), served)
	h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "g", "in", map[int32]int64{0: 8}), served)
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatal(kerr.ErrorForCode(c))
	}
	if h.committed("g", "in", 0) != 8 || h.committed("stale", "in", 0) != -1 {
		t.Fatal("offsets")
	}
}

// A stage outlives its connection until its timeout: the same producer id
// and epoch commit it from a new connection.
func TestCommitResumedFromANewConnection(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 2))
	h.m.Disconnected(h.cl.Owner)
	h.clock.Advance(testTimeout / 2)
	h.m.Sweep()
	resumed := Client{Owner: 9}
	if c := h.end(h.m, resumed, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("resumed commit: %v", kerr.ErrorForCode(c))
	}
	if got, _ := h.values("out", 0); !slices.Equal(got, []string{"a-0", "a-1"}) {
		t.Fatalf("records %v", got)
	}
	// A binding outlives its connection for good: a client reopens an
	// idle connection on its next request, and its next transaction must
	// find the id held.
	h.m.Disconnected(resumed.Owner)
	h.clock.Advance(10 * testTimeout)
	h.m.Sweep()
	h.add(h.m, Client{Owner: 10}, "tx", pid, epoch, "out", 0)
	h.produce(h.m, Client{Owner: 10}, batch("tx", pid, epoch, "out", 0, "b", 1))
	if c := h.end(h.m, Client{Owner: 11}, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("a producer idle past its timeout, on new connections: %v", kerr.ErrorForCode(c))
	}
}

// After a restart a resumed commit meets no stage: INVALID_TXN_STATE and
// nothing written.
func TestCommitAfterRestartWritesNothing(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 2))
	restarted := h.manager(Limits{})
	if c := h.end(restarted, h.cl, "tx", pid, epoch, true); c != kerr.InvalidTxnState.Code {
		t.Fatalf("commit after a restart: %v", kerr.ErrorForCode(c))
	}
	if _, hw := h.values("out", 0); hw != 0 {
		t.Fatal("a commit after a restart wrote")
	}
}

// The one-second sweep expires a transaction past its own timeout: its
// stage is dropped, its commit refused, its abort answered 0, and the
// producer's next transaction works.
func TestSweepExpiresATransactionPastItsTimeout(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 2))
	h.clock.Advance(testTimeout - time.Millisecond)
	if h.m.Sweep() != 0 {
		t.Fatal("expired before its timeout")
	}
	h.clock.Advance(time.Millisecond)
	if h.m.Sweep() != 1 {
		t.Fatal("not expired at its timeout")
	}
	if h.m.Staged() != 0 {
		t.Fatal("an expired stage still holds bytes")
	}
	if code, _ := h.m.Produce(bg, h.cl, batch("tx", pid, epoch, "out", 0, "b", 1)); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce after expiry: %v", kerr.ErrorForCode(code))
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.InvalidTxnState.Code {
		t.Fatalf("commit after expiry: %v", kerr.ErrorForCode(c))
	}
	if c := h.end(h.m, h.cl, "tx", pid, epoch, false); c != 0 {
		t.Fatalf("abort after expiry: %v", kerr.ErrorForCode(c))
	}
	if _, hw := h.values("out", 0); hw != 0 {
		t.Fatal("an expired transaction wrote")
	}
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "c", 1))
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatal(kerr.ErrorForCode(c))
	}
	// The deadline holds between sweeps too.
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.clock.Advance(testTimeout)
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != kerr.InvalidTxnState.Code {
		t.Fatalf("commit past the deadline, before a sweep: %v", kerr.ErrorForCode(c))
	}
}

// Two identities naming one transactional id hold two transactions.
func TestIdentitiesAreApart(t *testing.T) {
	h := newHarness(t, Limits{})
	a := Client{Identity: "acme", Owner: 1}
	b := Client{Identity: "globex", Owner: 2}
	pa, _ := h.init(h.m, a, "tx")
	h.add(h.m, a, "tx", pa, 0, "out", 0)
	// The dev broker is one tenant, so globex's claim meets acme's row and
	// bumps it; what matters here is that acme's binding is not globex's.
	pb, eb := h.init(h.m, b, "tx")
	if h.m.Held() != 2 {
		t.Fatalf("%d bindings for two identities", h.m.Held())
	}
	if code, _ := h.m.Produce(bg, b, batch("tx", pb, eb, "out", 0, "x", 1)); code != kerr.InvalidTxnState.Code {
		t.Fatalf("globex produced into acme's transaction: %v", kerr.ErrorForCode(code))
	}
}

// Started, the manager sweeps every SweepInterval of its clock, and Close
// stops it.
func TestStartSweepsOnItsClock(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 1))
	h.m.Start()
	waiting := func() bool { return h.clock.WaitersFor(SweepInterval) == 1 }
	require.Eventually(t, waiting, 10*time.Second, time.Millisecond, "the sweep is not waiting on the clock")
	h.clock.Advance(SweepInterval)
	require.Eventually(t, waiting, 10*time.Second, time.Millisecond, "the sweep did not wait again")
	require.NotZero(t, h.m.Staged(), "swept before the timeout")
	h.clock.Advance(testTimeout)
	require.Eventually(t, func() bool { return h.m.Staged() == 0 }, 10*time.Second, time.Millisecond, "the sweep did not expire the transaction")
	h.m.Close()
	h.m.Close() // idempotent
}
