package txn

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// itemBytes is never below what a push item adds to a commit body as the
// client encodes it (with its comma), for random legal topics, partitions,
// envelopes and dedup keys.
func TestItemBytesBoundsTheEncodedItem(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 4))
	const legal = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	for range 2000 {
		topic := make([]byte, 1+rng.IntN(249))
		for i := range topic {
			topic[i] = legal[rng.IntN(len(legal))]
		}
		blob := func() []byte {
			if rng.IntN(4) == 0 {
				return nil
			}
			b := make([]byte, rng.IntN(300))
			for i := range b {
				b[i] = byte(rng.UintN(256))
			}
			return b
		}
		rec := envelope.Record{Key: blob(), Value: blob(), Timestamp: rng.Int64() - rng.Int64()}
		payload := envelope.Append(nil, &rec)
		key := producer.DedupKeys(rng.Int64(), int16(rng.IntN(1<<15)), rng.Int32(), 1)[0]
		part := strconv.FormatInt(int64(rng.Int32()), 10)
		enc, err := json.Marshal(queen.PushItem{Queue: string(topic), Partition: part, Payload: payload, TransactionID: key})
		if err != nil {
			t.Fatal(err)
		}
		if got := itemBytes(string(topic), payload, key); int64(len(enc)+1) > got {
			t.Fatalf("item encodes to %d bytes with its comma, estimated %d: %s", len(enc)+1, got, enc)
		}
	}
}

// A transaction whose commit body would pass Queen's ceiling can never
// commit atomically: the batch that would take it there is refused
// MESSAGE_TOO_LARGE when staged and the transaction must abort, though no
// other cap is reached; one just under the ceiling commits, its real body
// inside the broker's own limit.
func TestCapCommitBody(t *testing.T) {
	const ceiling = 4 << 20
	h := newHarnessOn(t, Limits{MaxCommitBody: ceiling}, dev.Options{MaxBodyBytes: ceiling})
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	value := bytes.Repeat([]byte("v"), 8<<10)
	big := func(seq int32, n int) *Batch {
		b := &Batch{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, Topic: "out", Partition: 0, FirstSeq: seq}
		b.Keys = producer.DedupKeys(pid, epoch, seq, n)
		for range n {
			rec := envelope.Record{Value: value, Timestamp: -1}
			b.Payloads = append(b.Payloads, envelope.Append(nil, &rec))
			b.Bytes += int64(len(value))
		}
		return b
	}
	b := big(0, 1)
	fit := int((ceiling - riderReserve) / batchBody(b))
	h.produce(h.m, h.cl, big(0, fit))
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		t.Fatalf("a commit just under the body ceiling: %v", kerr.ErrorForCode(c))
	}
	if _, hw := h.values("out", 0); hw != int64(fit) {
		t.Fatalf("the log ends at %d, want %d records", hw, fit)
	}
	h.wire.mu.Lock()
	h.wire.txnCalls = 0
	h.wire.mu.Unlock()

	_, epoch = h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, big(0, fit))
	if code, _ := h.m.Produce(bg, h.cl, big(int32(fit), 1)); code != kerr.MessageTooLarge.Code {
		t.Fatalf("past the commit body's ceiling: %v", kerr.ErrorForCode(code))
	}
	h.capped("tx", pid, epoch)
}

// stageHold: no hold below half the commit body's room, then 10 ms
// doubling each further eighth, never past 80 ms (even past the room).
func TestStageHold(t *testing.T) {
	const room = 800
	for _, c := range []struct {
		body int64
		want time.Duration
	}{{0, 0}, {399, 0}, {400, 10 * time.Millisecond}, {499, 10 * time.Millisecond}, {500, 20 * time.Millisecond},
		{600, 40 * time.Millisecond}, {700, 80 * time.Millisecond}, {799, 80 * time.Millisecond}, {800, 80 * time.Millisecond}, {5000, 80 * time.Millisecond}} {
		if got := stageHold(c.body, room); got != c.want {
			t.Errorf("stageHold(%d, %d) = %v, want %v", c.body, room, got, c.want)
		}
	}
	if got := stageHold(10, 0); got != 0 {
		t.Errorf("no room: %v", got)
	}
}

// holdCase is the workload of the hold tests: a transaction of 8 KiB
// records, against a commit body ceiling of 4 MiB.
type holdCase struct {
	pid      int64
	epoch    int16
	implicit bool // KIP-890: each batch opens the transaction (cluster mode's test)
	holds    []time.Duration
}

const holdCeiling = 4 << 20

func (c *holdCase) seam(d time.Duration) { c.holds = append(c.holds, d) }

// batch is n records of the transaction "tx" at partition part of "out".
func (c *holdCase) batch(part, seq int32, n int) *Batch {
	value := bytes.Repeat([]byte("v"), 8<<10)
	b := &Batch{TransactionalID: "tx", ProducerID: c.pid, ProducerEpoch: c.epoch, Topic: "out", Partition: part, FirstSeq: seq, Implicit: c.implicit}
	b.Keys = producer.DedupKeys(c.pid, c.epoch, seq, n)
	for range n {
		rec := envelope.Record{Value: value, Timestamp: -1}
		b.Payloads = append(b.Payloads, envelope.Append(nil, &rec))
		b.Bytes += int64(len(value))
	}
	return b
}

// run stages two requests through produceAll: one that stays under half
// the room (no hold asked), then one past it (one hold, stageHold's for
// the body it took, at least its second band).
func (c *holdCase) run(t *testing.T, produceAll func([]*Batch) []Outcome) {
	t.Helper()
	room := int64(holdCeiling - riderReserve)
	per := batchBody(c.batch(0, 0, 1))
	half := int(room / 2 / per) // records that stay under half the room
	if out := produceAll([]*Batch{c.batch(0, 0, half/2), c.batch(1, 0, half-half/2)}); out[0].Code != 0 || out[1].Code != 0 {
		t.Fatalf("below half: %+v", out)
	}
	if len(c.holds) != 0 {
		t.Fatalf("held below half the room: %v", c.holds)
	}
	out := produceAll([]*Batch{c.batch(0, int32(half/2), 2), c.batch(1, int32(half-half/2), half/2)})
	if out[0].Code != 0 || out[1].Code != 0 {
		t.Fatalf("past half: %+v", out)
	}
	if want := stageHold(int64(half+2+half/2)*per, room); len(c.holds) != 1 || c.holds[0] != want || want < 2*holdUnit {
		t.Fatalf("past half: holds %v, want one of %v", c.holds, want)
	}
}

// A transactional Produce that takes its transaction's commit body past
// half the room is answered after a hold (stageHold), once per request
// (ProduceAll: the longest of its batches'), and the transaction still
// commits; below half nothing is held. Before the hold, a producer fast
// enough to pass the room within one transaction had every such commit
// refused (MESSAGE_TOO_LARGE).
func TestProduceHeldPastHalfTheCommitBody(t *testing.T) {
	h := newHarnessOn(t, Limits{MaxCommitBody: holdCeiling}, dev.Options{MaxBodyBytes: holdCeiling})
	var c holdCase
	m := New(Config{Queen: h.wire, IDs: h.ids, Groups: h.groups, Clock: h.clock, Limits: Limits{MaxCommitBody: holdCeiling},
		Log: slog.New(slog.DiscardHandler), Fault: testFault, hold: c.seam})
	c.pid, c.epoch = h.init(m, h.cl, "tx")
	h.add(m, h.cl, "tx", c.pid, c.epoch, "out", 0, 1)
	c.run(t, func(bs []*Batch) []Outcome { return m.ProduceAll(bg, h.cl, bs) })
	if code := h.end(m, h.cl, "tx", c.pid, c.epoch, true); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
}

// Cluster mode's staging half holds as single mode's does (stageHold over
// what the node staged of the transaction, once per request), and the
// owner's commit still takes the transaction. Before, Shared held nothing:
// a cluster producer fast enough to pass the room within one transaction
// had its commit refused (MESSAGE_TOO_LARGE).
func TestSharedProduceHeldPastHalfTheCommitBody(t *testing.T) {
	h := newHarnessOn(t, Limits{}, dev.Options{MaxBodyBytes: holdCeiling})
	quiet := slog.New(slog.DiscardHandler)
	lim := Limits{MaxCommitBody: holdCeiling}
	m := New(Config{Queen: h.wire, IDs: h.ids, Groups: h.groups, Clock: h.clock, Limits: lim, Log: quiet, Fault: testFault, NodeID: 1,
		Cluster: true, TransactionV2: true, Stages: QueenStages{Clock: func() int64 { return h.clock.Now().UnixMilli() }, Log: quiet}})
	c := holdCase{implicit: true}
	s := NewShared(SharedConfig{Queen: h.wire, Groups: h.groups, Limits: lim, Clock: h.clock, Log: quiet, Fault: testFault, NodeID: 2,
		TransactionV2: true, hold: c.seam})
	c.pid, c.epoch = h.init(m, h.cl, "tx")
	c.run(t, func(bs []*Batch) []Outcome { return s.ProduceAll(bg, h.cl, bs) })
	// One batch alone (Produce) past half is held too.
	if code, msg := s.Produce(bg, h.cl, c.batch(2, 0, 1)); code != 0 {
		t.Fatalf("one batch: %v %s", kerr.ErrorForCode(code), msg)
	}
	if len(c.holds) != 2 || c.holds[1] < 2*holdUnit {
		t.Fatalf("one batch: holds %v", c.holds)
	}
	if r := endV5(m, h.cl, "tx", c.pid, c.epoch, true); r.ErrorCode != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
