package txn

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// harness is a manager over the project's memory-only dev broker, reached
// over HTTP through the real Queen client, with a manual clock.
type harness struct {
	t      *testing.T
	q      *queen.Client // straight to the broker, for the assertions
	wire   *flakyQueen   // what the manager calls
	clock  *testsupport.FakeClock
	ids    *countingIDs
	groups *fakeGroups
	m      *Manager
	cl     Client
}

const testTimeout = 60 * time.Second

func newHarness(t *testing.T, lim Limits) *harness {
	t.Helper()
	return newHarnessOn(t, lim, dev.Options{})
}

// newHarnessOn is newHarness over a dev broker built from opts.
func newHarnessOn(t *testing.T, lim Limits, opts dev.Options) *harness {
	t.Helper()
	opts.Logger = slog.New(slog.DiscardHandler)
	q := devbroker.Start(t, opts, nil).Client
	h := &harness{t: t, q: q, clock: testsupport.NewFakeClock(time.Unix(1_787_824_800, 0)), ids: &countingIDs{next: 7}, groups: &fakeGroups{codes: map[string]int16{}}}
	h.wire = &flakyQueen{inner: q}
	h.m = h.manager(lim)
	h.cl = Client{Owner: 1}
	return h
}

// manager is another manager (another facade process) over the same
// broker, sharing the harness's clock and id allocator.
func (h *harness) manager(lim Limits) *Manager {
	return New(Config{Queen: h.wire, IDs: h.ids, Groups: h.groups, Clock: h.clock, Limits: lim, Log: slog.New(slog.DiscardHandler), Fault: testFault})
}

// testFault is the node's mapping as far as these tests reach it: an auth
// refusal is fatal, anything else retriable.
func testFault(err error) int16 {
	if queen.IsAuth(err) {
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

type countingIDs struct {
	mu   sync.Mutex
	next int64
	err  error
}

func (c *countingIDs) Next(context.Context, string, Queen) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	c.next++
	return c.next - 1, nil
}

// fakeGroups answers TxnCommitCheck from a table: a group listed refuses
// every commit with its code; any other is accepted as a consumer group.
type fakeGroups struct {
	mu    sync.Mutex
	codes map[string]int16
	calls int
}

func (g *fakeGroups) TxnCommitCheck(_ coordinator.Client, group, _ string, _ *string, _ int32, _ int16) (int16, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if c := g.codes[group]; c != 0 {
		return c, ""
	}
	return 0, "consumer"
}

// TxnFence: single mode is not fenced.
func (g *fakeGroups) TxnFence(coordinator.Client, string) (queen.KVOp, bool) {
	return queen.KVOp{}, false
}

func (g *fakeGroups) TxnFenceLost(coordinator.Client, string, *queen.PreconditionError) int16 {
	return kerr.NotCoordinator.Code
}

// flakyQueen passes calls through, except that a fault set for the next
// call fails it: before it reaches Queen (failTxn), or after (loseTxn,
// which applies the call and loses its answer). before runs ahead of each
// KV call.
type flakyQueen struct {
	inner *queen.Client

	mu       sync.Mutex
	failTxn  error
	loseTxn  error
	failKV   error
	before   func(ops []queen.KVOp)
	txnCalls int
	kvCalls  int
}

var errTransport = &queen.Error{Kind: queen.KindTransport, Route: "POST /api/v1/transaction", Message: "connection reset"}

func (f *flakyQueen) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	f.mu.Lock()
	f.kvCalls++
	before, fail := f.before, f.failKV
	f.failKV = nil
	f.mu.Unlock()
	if before != nil {
		before(ops)
	}
	if fail != nil {
		return nil, fail
	}
	return f.inner.KV(ctx, ops)
}

func (f *flakyQueen) Transaction(ctx context.Context, req queen.TxnRequest) ([]queen.KVResult, error) {
	f.mu.Lock()
	f.txnCalls++
	fail, lose := f.failTxn, f.loseTxn
	f.failTxn, f.loseTxn = nil, nil
	f.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	res, err := f.inner.Transaction(ctx, req)
	if lose != nil && err == nil {
		return nil, lose
	}
	return res, err
}

func (f *flakyQueen) calls() (kv, txn int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kvCalls, f.txnCalls
}

// Requests, each at its newest advertised version unless set otherwise.

func initReq(id string, timeout time.Duration) *kmsg.InitProducerIDRequest {
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version = 4
	r.TransactionalID = &id
	r.TransactionTimeoutMillis = int32(timeout.Milliseconds())
	return r
}

// init claims id and returns the producer id and epoch granted.
func (h *harness) init(m *Manager, cl Client, id string) (int64, int16) {
	h.t.Helper()
	r := m.InitProducerID(context.Background(), cl, initReq(id, testTimeout))
	if r.ErrorCode != 0 {
		h.t.Fatalf("InitProducerId %q: %v", id, kerr.ErrorForCode(r.ErrorCode))
	}
	return r.ProducerID, r.ProducerEpoch
}

// served accepts every partition of topics named "out", "in" or "t*".
func served(_ context.Context, topic string, partition int32) int16 {
	if topic == "missing" || partition < 0 || partition >= 1000 {
		return kerr.UnknownTopicOrPartition.Code
	}
	return 0
}

func addParts(id string, pid int64, epoch int16, topic string, parts ...int32) *kmsg.AddPartitionsToTxnRequest {
	r := kmsg.NewPtrAddPartitionsToTxnRequest()
	r.Version = 3
	r.TransactionalID, r.ProducerID, r.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	r.Topics = append(r.Topics, rt)
	return r
}

// addCodes is every partition's code of an AddPartitionsToTxn answer.
func addCodes(r *kmsg.AddPartitionsToTxnResponse) []int16 {
	return flatCodes(r.Topics, func(t kmsg.AddPartitionsToTxnResponseTopic) []int16 {
		var out []int16
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
		return out
	})
}

// flatCodes concatenates each topic's partition codes.
func flatCodes[T any](topics []T, codes func(T) []int16) []int16 {
	var out []int16
	for _, t := range topics {
		out = append(out, codes(t)...)
	}
	return out
}

func (h *harness) add(m *Manager, cl Client, id string, pid int64, epoch int16, topic string, parts ...int32) {
	h.t.Helper()
	for _, c := range addCodes(m.AddPartitionsToTxn(context.Background(), cl, addParts(id, pid, epoch, topic, parts...), served)) {
		if c != 0 {
			h.t.Fatalf("AddPartitionsToTxn %q: %v", id, kerr.ErrorForCode(c))
		}
	}
}

// batch is n records for topic/partition whose values are "<tag>-<i>".
func batch(id string, pid int64, epoch int16, topic string, partition int32, tag string, n int) *Batch {
	b := &Batch{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, Topic: topic, Partition: partition}
	for i := range n {
		rec := envelope.Record{Value: []byte(tag + "-" + strconv.Itoa(i)), Timestamp: -1}
		b.Payloads = append(b.Payloads, envelope.Append(nil, &rec))
		b.Bytes += int64(len(rec.Value))
	}
	return b
}

func (h *harness) produce(m *Manager, cl Client, b *Batch) {
	h.t.Helper()
	if code, msg := m.Produce(context.Background(), cl, b); code != 0 {
		h.t.Fatalf("Produce %s/%d: %v %s", b.Topic, b.Partition, kerr.ErrorForCode(code), msg)
	}
}

func offsetCommit(id string, pid int64, epoch int16, group, topic string, offsets map[int32]int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = 3
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = id, pid, epoch, group
	r.Generation, r.MemberID = 1, "member-1"
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < int32(len(offsets))+1000 && len(rt.Partitions) < len(offsets); p++ {
		if o, ok := offsets[p]; ok {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	r.Topics = append(r.Topics, rt)
	return r
}

func offsetCodes(r *kmsg.TxnOffsetCommitResponse) []int16 {
	return flatCodes(r.Topics, func(t kmsg.TxnOffsetCommitResponseTopic) []int16 {
		var out []int16
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
		return out
	})
}

func addOffsets(id string, pid int64, epoch int16, group string) *kmsg.AddOffsetsToTxnRequest {
	r := kmsg.NewPtrAddOffsetsToTxnRequest()
	r.Version = 3
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = id, pid, epoch, group
	return r
}

func endTxn(id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnRequest {
	r := kmsg.NewPtrEndTxnRequest()
	r.Version = 3
	r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = id, pid, epoch, commit
	return r
}

func (h *harness) end(m *Manager, cl Client, id string, pid int64, epoch int16, commit bool) int16 {
	h.t.Helper()
	return m.EndTxn(context.Background(), cl, endTxn(id, pid, epoch, commit)).ErrorCode
}

// values reads every record of topic/partition from the broker, as the
// record values, and the partition's high watermark.
func (h *harness) values(topic string, partition int32) ([]string, int64) {
	h.t.Helper()
	res, err := h.q.Fetch(context.Background(), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: topic, Partition: strconv.Itoa(int(partition)), Offset: 0}}})
	if err != nil {
		h.t.Fatalf("fetch: %v", err)
	}
	var out []string
	for _, r := range res[0].Records {
		out = append(out, string(envelope.DecodePayload(r.Payload, time.Time{}).Value))
	}
	return out, res[0].HighWatermark
}

// row reads a KV row: its value decoded into v (when not nil) and its
// version, 0 when absent.
func (h *harness) row(key string, v any) int64 {
	h.t.Helper()
	res, err := h.q.KV(context.Background(), []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{key}}})
	if err != nil {
		h.t.Fatalf("read %s: %v", key, err)
	}
	if len(res[0].Rows) == 0 {
		return 0
	}
	if v != nil {
		if err := json.Unmarshal(res[0].Rows[0].Value, v); err != nil {
			h.t.Fatalf("row %s: %v", key, err)
		}
	}
	return res[0].Rows[0].Version
}

func (h *harness) marker(id string) marker {
	h.t.Helper()
	var mk marker
	if h.row(queen.TxnKey(id), &mk) == 0 {
		h.t.Fatalf("no row for transactional id %q", id)
	}
	return mk
}

// committed reads the offset a group has committed for topic/partition,
// -1 when none.
func (h *harness) committed(group, topic string, partition int32) int64 {
	h.t.Helper()
	var v struct {
		Offset int64 `json:"offset"`
	}
	if h.row(queen.GroupOffsetKey(group, topic, partition), &v) == 0 {
		return -1
	}
	return v.Offset
}

var errForbidden = queen.Error{Kind: queen.KindForbidden, Status: 403, Route: "POST /api/v1/kv", Message: "Insufficient permissions"}

// stageThree begins transaction "tx" writing three records "a" to out/0
// (mk builds the batch: batch, or keyedBatch with dedup keys) and
// committing group g's offset 5 on in/0, and leaves it to be ended.
func (h *harness) stageThree(mk func(id string, pid int64, epoch int16, topic string, partition int32, tag string, n int) *Batch) (int64, int16) {
	h.t.Helper()
	pid, epoch := h.init(h.m, h.cl, "tx")
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, mk("tx", pid, epoch, "out", 0, "a", 3))
	h.m.TxnOffsetCommit(context.Background(), h.cl, offsetCommit("tx", pid, epoch, "g", "in", map[int32]int64{0: 5}), served)
	return pid, epoch
}

// retryLandsOnce retries the commit of stageThree's transaction and checks
// it landed once: answered 0, the three records stored once (high
// watermark 3), the offset committed, and a next transaction writing next
// committed behind the version the retry learnt.
func (h *harness) retryLandsOnce(pid int64, epoch int16, next *Batch) {
	h.t.Helper()
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		h.t.Fatalf("retried commit: %v, want 0", kerr.ErrorForCode(c))
	}
	if got, hw := h.values("out", 0); !slices.Equal(got, []string{"a-0", "a-1", "a-2"}) || hw != 3 {
		h.t.Fatalf("records after the retry: %v hw %d", got, hw)
	}
	if h.committed("g", "in", 0) != 5 {
		h.t.Fatal("offset not committed")
	}
	h.add(h.m, h.cl, "tx", pid, epoch, "out", 0)
	h.produce(h.m, h.cl, next)
	if c := h.end(h.m, h.cl, "tx", pid, epoch, true); c != 0 {
		h.t.Fatalf("next commit: %v", kerr.ErrorForCode(c))
	}
}
