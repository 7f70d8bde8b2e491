package coordinator

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

type harness struct {
	t     testing.TB
	clock *testsupport.TimerClock
	kv    *recKV
	c     *Coordinator
	cl    Client
}

const (
	testSession   = 10 * time.Second
	testRebalance = 20 * time.Second
)

// devQueen is an in-process dev broker reached over HTTP by the real client.
func devQueen(t testing.TB) *queen.Client {
	return devbroker.Start(t, dev.Options{Logger: slog.New(slog.DiscardHandler)}, nil).Client
}

// newHarness is a coordinator over the project's memory-only dev broker,
// reached over HTTP through the real Queen client.
func newHarness(t testing.TB, mod func(*Config)) *harness {
	return newHarnessOn(t, devQueen(t), mod)
}

// newMemHarness is a coordinator over memKV, for the store behaviours the
// dev broker cannot be made to show on demand (a read budget cutting rows).
func newMemHarness(t testing.TB, mod func(*Config)) (*harness, *memkv.KV) {
	m := memkv.New()
	return newHarnessOn(t, m, mod), m
}

func newHarnessOn(t testing.TB, inner KV, mod func(*Config)) *harness {
	h := &harness{t: t, clock: testsupport.NewTimerClock(time.Unix(1_787_824_800, 0)), kv: &recKV{inner: inner}}
	cfg := Config{
		KV:                h.kv,
		Clock:             h.clock,
		Ownership:         ownership.Single{Node: ownership.Broker{NodeID: 0, Host: "127.0.0.1", Port: 9092}},
		MinSessionTimeout: 6 * time.Second,
		MaxSessionTimeout: 300 * time.Second,
		Log:               slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&cfg)
	}
	h.c = New(cfg)
	h.cl = Client{ID: "cli", Host: "/127.0.0.1"}
	return h
}

// consumerMeta is a ConsumerProtocolSubscription for topics.
func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 1
	m.Topics = topics
	return m.AppendTo(nil)
}

func joinReq(version int16, group, member string, protos ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = version
	r.Group = group
	r.MemberID = member
	r.SessionTimeoutMillis = int32(testSession / time.Millisecond)
	r.RebalanceTimeoutMillis = int32(testRebalance / time.Millisecond)
	r.ProtocolType = "consumer"
	if len(protos) == 0 {
		protos = []string{"range"}
	}
	for _, p := range protos {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name = p
		jp.Metadata = consumerMeta("orders")
		r.Protocols = append(r.Protocols, jp)
	}
	return r
}

// joinAsync sends a JoinGroup and waits until it is either answered or
// parked in the group, so the test knows which one before moving time.
func (h *harness) joinAsync(req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	h.t.Helper()
	return answeredOrParked(h, req.Group, "JoinGroup", func() *kmsg.JoinGroupResponse {
		return h.c.JoinGroup(context.Background(), h.cl, req)
	})
}

func (h *harness) syncAsync(req *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	h.t.Helper()
	return answeredOrParked(h, req.Group, "SyncGroup", func() *kmsg.SyncGroupResponse {
		return h.c.SyncGroup(context.Background(), h.cl, req)
	})
}

// answeredOrParked runs call in a goroutine and returns once it has either
// answered or parked one more request in group.
func answeredOrParked[T any](h *harness, group, what string, call func() T) <-chan T {
	h.t.Helper()
	out := make(chan T, 1)
	before := h.parked(group)
	go func() { out <- call() }()
	for range 5000 {
		if len(out) > 0 || h.parked(group) > before {
			return out
		}
		time.Sleep(time.Millisecond)
	}
	h.t.Fatalf("%s neither answered nor parked", what)
	return out
}

// parked counts the group's JoinGroup and SyncGroup requests that are
// blocked waiting.
func (h *harness) parked(group string) int {
	g := h.c.lookup(h.cl, group)
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, m := range g.members {
		if m.joinWait != nil {
			n++
		}
		if m.syncWait != nil {
			n++
		}
	}
	return n
}

func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("no answer")
	}
	var zero T
	return zero
}

func pending[T any](t testing.TB, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("answered early: %+v", v)
	default:
	}
}

func (h *harness) state(group string) string {
	g := h.c.lookup(h.cl, group)
	if g == nil {
		return "absent"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state.String()
}

func syncReq(group, member string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 2
	r.Group, r.MemberID, r.Generation = group, member, gen
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, []byte(a)
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	return r
}

func (h *harness) heartbeat(group, member string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 2
	r.Group, r.MemberID, r.Generation = group, member, gen
	return h.c.Heartbeat(context.Background(), h.cl, r).ErrorCode
}

func (h *harness) leave(group, member string) int16 {
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version = 2
	r.Group, r.MemberID = group, member
	return h.c.LeaveGroup(context.Background(), h.cl, r).ErrorCode
}

// stableSolo forms a one-member Stable group (join delay must be 0) and
// returns the member id and generation.
func (h *harness) stableSolo(group string) (string, int32) {
	h.t.Helper()
	j := recv(h.t, h.joinAsync(joinReq(3, group, "")))
	if j.ErrorCode != 0 {
		h.t.Fatalf("join: %d", j.ErrorCode)
	}
	s := h.c.SyncGroup(context.Background(), h.cl, syncReq(group, j.MemberID, j.Generation, map[string]string{j.MemberID: "a"}))
	if s.ErrorCode != 0 {
		h.t.Fatalf("sync: %d", s.ErrorCode)
	}
	return j.MemberID, j.Generation
}

func commitReq(group, member string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 6
	r.Group, r.MemberID, r.Generation = group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	parts := make([]int32, 0, len(offsets))
	for p := range offsets {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = p, offsets[p]
		t.Partitions = append(t.Partitions, cp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func (h *harness) commit(req *kmsg.OffsetCommitRequest) []int16 {
	resp := h.c.OffsetCommit(context.Background(), h.cl, req)
	var codes []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

func (h *harness) fetch(group, topic string, parts ...int32) *kmsg.OffsetFetchResponse {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = group
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic, t.Partitions = topic, parts
	r.Topics = append(r.Topics, t)
	return h.c.OffsetFetch(context.Background(), h.cl, r)
}

// recKV records every call and can fail one before it reaches the store.
type recKV struct {
	inner KV
	mu    sync.Mutex
	calls [][]queen.KVOp
	res   [][]queen.KVResult // aligned with calls; nil for a failed call
	fail  func(ops []queen.KVOp) error
}

func (r *recKV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	r.mu.Lock()
	i := len(r.calls)
	r.calls = append(r.calls, append([]queen.KVOp(nil), ops...))
	r.res = append(r.res, nil)
	fail := r.fail
	r.mu.Unlock()
	if fail != nil {
		if err := fail(ops); err != nil {
			return nil, err
		}
	}
	res, err := r.inner.KV(ctx, ops)
	r.mu.Lock()
	r.res[i] = res
	r.mu.Unlock()
	return res, err
}

func (r *recKV) resultsSince(n int) [][]queen.KVResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]queen.KVResult(nil), r.res[n:]...)
}

func (r *recKV) setFail(f func(ops []queen.KVOp) error) {
	r.mu.Lock()
	r.fail = f
	r.mu.Unlock()
}

func (r *recKV) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func (r *recKV) callsSince(n int) [][]queen.KVOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]queen.KVOp(nil), r.calls[n:]...)
}

// get reads one key straight from the store.
func (r *recKV) get(key string) (json.RawMessage, bool) {
	res, err := r.inner.KV(context.Background(), []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{key}}})
	if err != nil || len(res[0].Rows) == 0 {
		return nil, false
	}
	return res[0].Rows[0].Value, true
}

// count is how many rows the facade's namespace holds under prefix.
func (r *recKV) count(prefix string) int {
	res, err := r.inner.KV(context.Background(), []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: prefix, Limit: 1000, KeysOnly: true}})
	if err != nil {
		panic(err)
	}
	return len(res[0].Rows)
}

// put writes a row unconditionally, as another process would.
func (r *recKV) put(key string, value any) {
	if _, err := r.inner.KV(context.Background(), []queen.KVOp{putOp(key, value)}); err != nil {
		panic(err)
	}
}
