package txn

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// capped asserts the transaction is abortable after a cap: its commit is
// INVALID_TXN_STATE and writes nothing, its abort is 0, and the next
// transaction works.
func (h *harness) capped(id string, pid int64, epoch int16) {
	h.t.Helper()
	if h.m.Staged() != 0 {
		h.t.Fatalf("a capped transaction still holds %d bytes", h.m.Staged())
	}
	if c := h.end(h.m, h.cl, id, pid, epoch, true); c != kerr.InvalidTxnState.Code {
		h.t.Fatalf("commit after a cap: %v", kerr.ErrorForCode(c))
	}
	if _, n := h.wire.calls(); n != 0 {
		h.t.Fatal("a capped transaction was sent")
	}
	if c := h.end(h.m, h.cl, id, pid, epoch, false); c != 0 {
		h.t.Fatalf("abort after a cap: %v", kerr.ErrorForCode(c))
	}
	h.add(h.m, h.cl, id, pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch(id, pid, epoch, "out", 0, "after", 1))
	if c := h.end(h.m, h.cl, id, pid, epoch, true); c != 0 {
		h.t.Fatalf("the next transaction: %v", kerr.ErrorForCode(c))
	}
}

func TestCapMaxRecords(t *testing.T) {
	h := newHarness(t, Limits{MaxRecords: 5})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, batch("tx", pid, epoch, "out", 0, "a", 5))
	if code, _ := h.m.Produce(bg, h.cl, batch("tx", pid, epoch, "out", 0, "b", 1)); code != kerr.MessageTooLarge.Code {
		t.Fatalf("past the record cap: %v", kerr.ErrorForCode(code))
	}
	if code, _ := h.m.Produce(bg, h.cl, batch("tx", pid, epoch, "out", 0, "c", 1)); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce into a capped transaction: %v", kerr.ErrorForCode(code))
	}
	h.capped("tx", pid, epoch)
}

func TestCapMaxBytes(t *testing.T) {
	h := newHarness(t, Limits{MaxBytes: 10})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	b := batch("tx", pid, epoch, "out", 0, "a", 1) // "a-0": 3 bytes
	b.Bytes = 10
	h.produce(h.m, h.cl, b) // at the cap, not past it
	b = batch("tx", pid, epoch, "out", 0, "b", 1)
	b.Bytes = 1
	if code, _ := h.m.Produce(bg, h.cl, b); code != kerr.MessageTooLarge.Code {
		t.Fatalf("past the byte cap: %v", kerr.ErrorForCode(code))
	}
	h.capped("tx", pid, epoch)
}

// The staged-bytes cap is the process's: two transactions share it.
func TestCapMaxStagedBytes(t *testing.T) {
	h := newHarness(t, Limits{MaxBytes: 100, MaxStagedBytes: 100})
	pa, ea := h.init(h.m, h.cl, "a")
	other := Client{Owner: 2}
	pb, eb := h.init(h.m, other, "b")
	h.add(h.m, h.cl, "a", pa, ea, "out", 0)
	h.add(h.m, other, "b", pb, eb, "out", 1)
	ba := batch("a", pa, ea, "out", 0, "a", 1)
	ba.Bytes = 60
	h.produce(h.m, h.cl, ba)
	bb := batch("b", pb, eb, "out", 1, "b", 1)
	bb.Bytes = 41
	if code, _ := h.m.Produce(bg, other, bb); code != kerr.MessageTooLarge.Code {
		t.Fatalf("past the process cap: %v", kerr.ErrorForCode(code))
	}
	if h.m.Staged() != 60 {
		t.Fatalf("staged %d, want a's 60", h.m.Staged())
	}
	if c := h.end(h.m, other, "b", pb, eb, true); c != kerr.InvalidTxnState.Code {
		t.Fatalf("b commits past the cap: %v", kerr.ErrorForCode(c))
	}
	// a was under its caps and commits; its bytes go back.
	if c := h.end(h.m, h.cl, "a", pa, ea, true); c != 0 {
		t.Fatalf("a: %v", kerr.ErrorForCode(c))
	}
	if h.m.Staged() != 0 {
		t.Fatalf("staged %d after both ended", h.m.Staged())
	}
}

func TestCapMaxPartitions(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	var parts []int32
	for p := range int32(MaxPartitions) {
		parts = append(parts, p)
	}
	h.add(h.m, h.cl, "tx", pid, epoch, "out", parts...)
	// Adding one already added is not past the cap.
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	got := addCodes(h.m.AddPartitionsToTxn(bg, h.cl, addParts("tx", pid, epoch, "t2", 0, 1), served))
	if !slices.Equal(got, []int16{kerr.MessageTooLarge.Code, kerr.MessageTooLarge.Code}) {
		t.Fatalf("past the partition cap: %v", got)
	}
	h.capped("tx", pid, epoch)
}

func TestCapMaxOffsets(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	offsets := map[int32]int64{}
	for p := range int32(MaxOffsets) {
		offsets[p] = int64(p)
	}
	if got := offsetCodes(h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "g", "in", offsets), served)); slices.ContainsFunc(got, func(c int16) bool { return c != 0 }) {
		t.Fatalf("62 offsets: %v", got)
	}
	// Re-committing a staged partition costs nothing.
	if got := offsetCodes(h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "g", "in", map[int32]int64{3: 30}), served)); got[0] != 0 {
		t.Fatalf("re-commit at the cap: %v", got)
	}
	got := offsetCodes(h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "g", "in2", map[int32]int64{0: 1}), served))
	if got[0] != kerr.InvalidCommitOffsetSize.Code {
		t.Fatalf("the 63rd offset: %v", got)
	}
	h.capped("tx", pid, epoch)
}

// The 62 offsets at the cap commit in one call whose rider is exactly 64
// ops: the fence, the index, the offsets.
func TestSixtyTwoOffsetsCommit(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, epoch := h.init(h.m, h.cl, "tx")
	offsets := map[int32]int64{}
	for p := range int32(MaxOffsets) {
		offsets[p] = int64(p) + 100
	}
	h.m.TxnOffsetCommit(bg, h.cl, offsetCommit("tx", pid, epoch, "g", "in", offsets), served)
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("commit of 62 offsets: %v", kerr.ErrorForCode(c))
	}
	if h.committed("g", "in", 61) != 161 {
		t.Fatal("the last offset was not committed")
	}
}

func TestCapMaxTimeout(t *testing.T) {
	h := newHarness(t, Limits{MaxTimeout: time.Minute})
	for _, ms := range []int32{0, -1, 60_001} {
		r := h.m.InitProducerID(bg, h.cl, initReq("tx", time.Duration(ms)*time.Millisecond))
		if r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
			t.Fatalf("timeout %d ms: %v", ms, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if kv, _ := h.wire.calls(); kv != 0 {
		t.Fatal("a refused timeout claimed the id")
	}
	h.m.InitProducerID(bg, h.cl, initReq("tx", time.Minute))
	if h.m.Held() != 1 {
		t.Fatal("the ceiling itself was refused")
	}
}

// QUEEN_KAFKA_TXN_MAX_OPEN bounds the open transactions: one more is
// refused MESSAGE_TOO_LARGE where it would open, and nothing of it opens;
// once another has ended it opens.
func TestCapMaxOpen(t *testing.T) {
	h := newHarness(t, Limits{MaxOpen: 1})
	ca, cb := Client{Owner: 1}, Client{Owner: 2}
	pa, ea := h.init(h.m, ca, "a")
	pb, eb := h.init(h.m, cb, "b")
	h.add(h.m, ca, "a", pa, ea, "out", 0)
	if got := addCodes(h.m.AddPartitionsToTxn(bg, cb, addParts("b", pb, eb, "out", 1), served)); got[0] != kerr.MessageTooLarge.Code {
		t.Fatalf("a second open transaction: %v", got)
	}
	if c := h.m.AddOffsetsToTxn(bg, cb, addOffsets("b", pb, eb, "g")).ErrorCode; c != kerr.MessageTooLarge.Code {
		t.Fatalf("a second open transaction by AddOffsetsToTxn: %v", kerr.ErrorForCode(c))
	}
	if got := offsetCodes(h.m.TxnOffsetCommit(bg, cb, offsetCommit("b", pb, eb, "g", "in", map[int32]int64{0: 1}), served)); got[0] != kerr.MessageTooLarge.Code {
		t.Fatalf("a second open transaction by TxnOffsetCommit: %v", got)
	}
	if code, _ := h.m.Produce(bg, cb, batch("b", pb, eb, "out", 1, "b", 1)); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce of the refused transaction: %v", kerr.ErrorForCode(code))
	}
	if c := h.end(h.m, cb, "b", pb, eb, false); c != kerr.InvalidTxnState.Code {
		t.Fatalf("abort of a transaction that never opened: %v", kerr.ErrorForCode(c))
	}
	if c := h.end(h.m, ca, "a", pa, ea, false); c != 0 {
		t.Fatal(kerr.ErrorForCode(c))
	}
	h.add(h.m, cb, "b", pb, eb, "out", 1)
	h.produce(h.m, cb, batch("b", pb, eb, "out", 1, "b", 1))
	if c := h.end(h.m, cb, "b", pb, eb, true); c != 0 {
		t.Fatalf("b once a ended: %v", kerr.ErrorForCode(c))
	}
	// Every way out of an open transaction gives its place back: an
	// expiry, a cap, a takeover.
	h.add(h.m, ca, "a", pa, ea, "out", 0)
	h.clock.Advance(testTimeout)
	h.m.Sweep()
	h.end(h.m, ca, "a", pa, ea, false)
	h.add(h.m, cb, "b", pb, eb, "out", 0)
	h.init(h.m, Client{Owner: 3}, "b")
	if h.m.Open() != 0 {
		t.Fatalf("%d transactions counted open", h.m.Open())
	}
	h.add(h.m, ca, "a", pa, ea, "out", 0)
	if h.m.Open() != 1 {
		t.Fatalf("%d transactions counted open", h.m.Open())
	}
}

// The transactional ids held are bounded too: a binding whose connection
// closed gives way, a live one does not, and neither does one of a
// connection that drives several ids.
func TestHeldIDsAreBounded(t *testing.T) {
	h := newHarness(t, Limits{})
	h.m.maxBindings = 2
	h.init(h.m, Client{Owner: 1}, "a")
	h.init(h.m, Client{Owner: 2}, "b")
	r := h.m.InitProducerID(bg, Client{Owner: 3}, initReq("c", testTimeout))
	if r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("past the bound: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// An id already held is a re-claim, not a new one.
	h.init(h.m, Client{Owner: 1}, "a")
	h.m.Disconnected(2)
	h.init(h.m, Client{Owner: 3}, "c")
	if h.m.Held() != 2 {
		t.Fatalf("held %d", h.m.Held())
	}
	// Owner 1 claims another id: its "a" is not given up.
	if r := h.m.InitProducerID(bg, Client{Owner: 1}, initReq("d", testTimeout)); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("a live connection's id was evicted: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// An open transaction is never evicted, orphaned or not.
	pc, ec := h.init(h.m, Client{Owner: 3}, "c")
	h.add(h.m, Client{Owner: 3}, "c", pc, ec, "out", 0)
	h.m.Disconnected(3)
	if r := h.m.InitProducerID(bg, Client{Owner: 4}, initReq("e", testTimeout)); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("evicted an open transaction: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// KIP-360: a producer carrying its id and epoch (v3+) is bumped; the bump
// retried is answered the same; a fenced producer cannot pass for a retry.
func TestInitProducerIDBump(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, e0 := h.init(h.m, h.cl, "tx")
	bump := func(cl Client, pid int64, epoch int16, version int16) *kmsg.InitProducerIDResponse {
		r := initReq("tx", testTimeout)
		r.Version, r.ProducerID, r.ProducerEpoch = version, pid, epoch
		return h.m.InitProducerID(bg, cl, r)
	}
	r := bump(h.cl, pid, e0, 4)
	if r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != 1 {
		t.Fatalf("bump: %v %d/%d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
	if r := bump(h.cl, pid, e0, 4); r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("retried bump: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
	// A new producer takes the id (epoch 2); the old one's bump at epoch 1
	// is fenced, with v3's code below v4.
	h.init(h.m, Client{Owner: 2}, "tx")
	if r := bump(h.cl, pid, 1, 4); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("fenced bump v4: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := bump(h.cl, pid, 1, 3); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("fenced bump v3: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// After a restart the row decides.
	restarted := h.manager(Limits{})
	r2 := initReq("tx", testTimeout)
	r2.ProducerID, r2.ProducerEpoch = pid, 1
	if r := restarted.InitProducerID(bg, h.cl, r2); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("stale bump after a restart: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	r2.ProducerEpoch = 2
	if r := restarted.InitProducerID(bg, h.cl, r2); r.ErrorCode != 0 || r.ProducerEpoch != 3 {
		t.Fatalf("bump after a restart: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
}

// A claim whose Queen call fails leaves nothing behind and answers a
// retriable code; an auth refusal is fatal.
func TestClaimFailures(t *testing.T) {
	h := newHarness(t, Limits{})
	h.wire.failKV = errTransport
	if r := h.m.InitProducerID(bg, h.cl, initReq("tx", testTimeout)); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("transport: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	h.ids.err = errTransport
	if r := h.m.InitProducerID(bg, h.cl, initReq("tx", testTimeout)); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("id allocation: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	h.ids.err = nil
	h.wire.failKV = &errForbidden
	if r := h.m.InitProducerID(bg, h.cl, initReq("tx", testTimeout)); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("forbidden: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if h.m.Held() != 0 {
		t.Fatal("failed claims left bindings")
	}
	long := make([]byte, 600)
	for i := range long {
		long[i] = 'x'
	}
	if r := h.m.InitProducerID(bg, h.cl, initReq(string(long), testTimeout)); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("an id no key holds: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
