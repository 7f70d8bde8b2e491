package txn

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-890 (issue 23) at the coordinator: EndTxn v5, the implicit add, and
// the admin views.

func (h *harness) managerV2() *Manager {
	return New(Config{Queen: h.wire, IDs: h.ids, Groups: h.groups, Clock: h.clock, Log: slog.New(slog.DiscardHandler), Fault: testFault, TransactionV2: true})
}

func endV5(m *Manager, cl Client, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	r := endTxn(id, pid, epoch, commit)
	r.Version = 5
	return m.EndTxn(context.Background(), cl, r)
}

func implicit(b *Batch) *Batch { b.Implicit = true; return b }

// An epoch that reaches MaxInt16-1 moves to a fresh producer id at epoch
// 0, as Kafka's coordinator does; the decision's retry with the old id is
// answered the new one, and the row says where it moved from.
func TestV2EpochOverflowTakesAFreshProducerID(t *testing.T) {
	h := newHarness(t, Limits{})
	m := h.managerV2()
	pid, _ := h.init(m, h.cl, "ov")
	b, _ := m.lock(Key{ID: "ov"}, false)
	b.epoch = math.MaxInt16 - 1
	b.mu.Unlock()
	h.produce(m, h.cl, implicit(batch("ov", pid, math.MaxInt16-1, "out", 0, "x", 2)))
	r := endV5(m, h.cl, "ov", pid, math.MaxInt16-1, true)
	if r.ErrorCode != 0 || r.ProducerID == pid || r.ProducerEpoch != 0 {
		t.Fatalf("overflowing commit: %v pid %d epoch %d (was %d)", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch, pid)
	}
	if vs, _ := h.values("out", 0); len(vs) != 2 {
		t.Fatalf("committed %v", vs)
	}
	mk := h.marker("ov")
	if mk.PID != r.ProducerID || mk.Epoch != 0 || !mk.Bumped || mk.FromPID != pid || mk.FromEpoch != math.MaxInt16-1 || mk.State != rowCommitted {
		t.Fatalf("row %+v", mk)
	}
	again := endV5(m, h.cl, "ov", pid, math.MaxInt16-1, true)
	if again.ErrorCode != 0 || again.ProducerID != r.ProducerID || again.ProducerEpoch != 0 {
		t.Fatalf("retry: %v %d/%d", kerr.ErrorForCode(again.ErrorCode), again.ProducerID, again.ProducerEpoch)
	}
	if code, _ := m.Admit(h.cl, implicit(batch("ov", pid, math.MaxInt16-1, "out", 0, "late", 1))); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("a batch of the old producer id: %v", kerr.ErrorForCode(code))
	}
}

// An abort whose row landed but whose answer was lost is recognised by
// its retry from the row (the bump it wrote), and answered the same.
func TestV2AbortWithALostAnswer(t *testing.T) {
	h := newHarness(t, Limits{})
	m := h.managerV2()
	pid, _ := h.init(m, h.cl, "la")
	h.produce(m, h.cl, implicit(batch("la", pid, 0, "out", 0, "x", 1)))
	h.wire.mu.Lock()
	h.wire.failKV = errTransport
	h.wire.mu.Unlock()
	if r := endV5(m, h.cl, "la", pid, 0, false); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("abort with its write failed: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if mk := h.marker("la"); mk.Epoch != 0 {
		t.Fatalf("a failed abort moved the row: %+v", mk)
	}
	r := endV5(m, h.cl, "la", pid, 0, false)
	if r.ErrorCode != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("abort: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
	if vs, _ := h.values("out", 0); len(vs) != 0 {
		t.Fatalf("an abort wrote %v", vs)
	}
}

// Without transaction version 2 an implicit batch still needs its
// partition added.
func TestImplicitAddNeedsTransactionV2(t *testing.T) {
	h := newHarness(t, Limits{})
	pid, _ := h.init(h.m, h.cl, "v1")
	if code, _ := h.m.Admit(h.cl, implicit(batch("v1", pid, 0, "out", 0, "x", 1))); code != kerr.InvalidTxnState.Code {
		t.Fatalf("implicit batch under version 1: %v", kerr.ErrorForCode(code))
	}
}

// The old protocol's guard: an EndTxn on a connection older than the open
// transaction that took no part in it is a late one and decides nothing;
// any connection that took part, or is newer, decides it.
func TestLateEndTxnOldProtocol(t *testing.T) {
	h := newHarness(t, Limits{})
	old, fresh, later := Client{Owner: 1}, Client{Owner: 2}, Client{Owner: 3}
	pid, epoch := h.init(h.m, old, "late")
	h.add(h.m, old, "late", pid, epoch, "out", 0)
	h.produce(h.m, old, batch("late", pid, epoch, "out", 0, "t1", 1))
	if c := h.end(h.m, fresh, "late", pid, epoch, true); c != 0 {
		t.Fatalf("commit through a newer connection: %v", kerr.ErrorForCode(c))
	}
	h.add(h.m, fresh, "late", pid, epoch, "out", 0)
	h.produce(h.m, fresh, batch("late", pid, epoch, "out", 0, "t2", 1))
	if c := h.end(h.m, old, "late", pid, epoch, true); c != 0 {
		t.Fatalf("late commit: %v, want the repeat's 0", kerr.ErrorForCode(c))
	}
	if c := h.end(h.m, old, "late", pid, epoch, false); c != kerr.InvalidTxnState.Code {
		t.Fatalf("late abort: %v", kerr.ErrorForCode(c))
	}
	if vs, _ := h.values("out", 0); len(vs) != 1 {
		t.Fatalf("the late EndTxn touched transaction 2: %v", vs)
	}
	if c := h.end(h.m, later, "late", pid, epoch, true); c != 0 {
		t.Fatalf("commit through a reconnect: %v", kerr.ErrorForCode(c))
	}
	if vs, _ := h.values("out", 0); len(vs) != 2 {
		t.Fatalf("transaction 2: %v", vs)
	}
}

// ListTransactions and DescribeTransactions over the ids the process
// holds: Kafka's state names and filters.
func TestListAndDescribeTransactions(t *testing.T) {
	h := newHarness(t, Limits{})
	m := h.managerV2()
	pa, _ := h.init(m, h.cl, "a-open")
	h.produce(m, h.cl, implicit(batch("a-open", pa, 0, "out", 3, "x", 1)))
	pb, _ := h.init(m, h.cl, "b-done")
	h.produce(m, h.cl, implicit(batch("b-done", pb, 0, "out", 0, "x", 1)))
	if r := endV5(m, h.cl, "b-done", pb, 0, true); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	h.init(m, h.cl, "c-empty")
	h.init(m, Client{Identity: "other"}, "d-elsewhere")

	list := func(v int16, set func(*kmsg.ListTransactionsRequest)) (*kmsg.ListTransactionsResponse, map[string]string) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = v
		if set != nil {
			set(req)
		}
		r := m.ListTransactions(context.Background(), h.cl, req)
		got := map[string]string{}
		for _, s := range r.TransactionStates {
			got[s.TransactionalID] = s.TransactionState
		}
		return r, got
	}
	eq := func(what string, got, want map[string]string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: %v, want %v", what, got, want)
			}
		}
	}
	_, got := list(0, nil)
	eq("all", got, map[string]string{"a-open": "Ongoing", "b-done": "CompleteCommit", "c-empty": "Empty"})
	r, got := list(0, func(r *kmsg.ListTransactionsRequest) { r.StateFilters = []string{"Ongoing", "Bogus"} })
	eq("states", got, map[string]string{"a-open": "Ongoing"})
	if len(r.UnknownStateFilters) != 1 || r.UnknownStateFilters[0] != "Bogus" {
		t.Fatalf("unknown filters %v", r.UnknownStateFilters)
	}
	_, got = list(0, func(r *kmsg.ListTransactionsRequest) { r.StateFilters = []string{"Bogus"} })
	eq("only unknown states", got, map[string]string{})
	_, got = list(0, func(r *kmsg.ListTransactionsRequest) { r.ProducerIDFilters = []int64{pb} })
	eq("producer ids", got, map[string]string{"b-done": "CompleteCommit"})
	_, got = list(1, func(r *kmsg.ListTransactionsRequest) { r.DurationFilterMillis = 5_000 })
	eq("open past 5 s, none yet", got, map[string]string{})
	h.clock.Advance(6 * time.Second)
	_, got = list(1, func(r *kmsg.ListTransactionsRequest) { r.DurationFilterMillis = 5_000 })
	eq("open past 5 s", got, map[string]string{"a-open": "Ongoing"})
	_, got = list(2, func(r *kmsg.ListTransactionsRequest) { p := "[bc]-.*"; r.TransactionalIDPattern = &p })
	eq("pattern", got, map[string]string{"b-done": "CompleteCommit", "c-empty": "Empty"})
	r, _ = list(2, func(r *kmsg.ListTransactionsRequest) { p := "(("; r.TransactionalIDPattern = &p })
	if r.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("bad pattern: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"a-open", "b-done", "nope", ""}
	d := m.DescribeTransactions(context.Background(), h.cl, req).TransactionStates
	if d[0].ErrorCode != 0 || d[0].State != "Ongoing" || d[0].ProducerID != pa || d[0].ProducerEpoch != 0 ||
		d[0].TimeoutMillis != int32(testTimeout.Milliseconds()) || d[0].StartTimestamp <= 0 ||
		len(d[0].Topics) != 1 || d[0].Topics[0].Topic != "out" || len(d[0].Topics[0].Partitions) != 1 || d[0].Topics[0].Partitions[0] != 3 {
		t.Fatalf("open: %+v", d[0])
	}
	if d[1].ErrorCode != 0 || d[1].State != "CompleteCommit" || d[1].ProducerEpoch != 1 || d[1].StartTimestamp != -1 || len(d[1].Topics) != 0 {
		t.Fatalf("committed: %+v", d[1])
	}
	if d[2].ErrorCode != kerr.TransactionalIDNotFound.Code || d[3].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown and empty: %v %v", kerr.ErrorForCode(d[2].ErrorCode), kerr.ErrorForCode(d[3].ErrorCode))
	}
}
