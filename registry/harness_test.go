package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
)

const (
	testHB  = 2 * time.Second
	testTTL = 10 * time.Second
)

type harness struct {
	t     *testing.T
	clk   *fakeClock
	store KV
	logs  *testsupport.LogBuffer
}

func newHarness(t *testing.T) *harness {
	clk := newFakeClock()
	return &harness{t: t, clk: clk, store: newStore(t, clk), logs: &testsupport.LogBuffer{}}
}

func (h *harness) cfg(id int32, incarnation string) Config {
	return Config{
		Cluster: "queen", NodeID: id, Host: fmt.Sprintf("node%d.test", id), Port: 9092, Version: "test",
		Heartbeat: testHB, TTL: testTTL, Incarnation: incarnation, Clock: h.clk,
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// start claims id through kv and closes the session at the end of the test.
func (h *harness) start(kv KV, cfg Config) *Session {
	h.t.Helper()
	s, err := Start(context.Background(), kv, cfg)
	if err != nil {
		h.t.Fatalf("start node %d: %v", cfg.NodeID, err)
	}
	h.t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// tick advances one heartbeat and waits until n loops are armed again, i.e.
// every heartbeat that fired has finished.
func (h *harness) tick(n int) {
	h.t.Helper()
	h.clk.Advance(testHB)
	waitFor(h.t, fmt.Sprintf("%d armed timers", n), func() bool { return h.clk.Waiters() >= n })
}

// row reads key straight from the store: version 0 when absent.
func (h *harness) row(key string) (int64, Node) {
	h.t.Helper()
	res, err := h.store.KV(context.Background(), []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: key, Limit: 1000}})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, r := range res[0].Rows {
		if r.Key == key {
			n, _ := decodeNode(r.Value)
			return r.Version, n
		}
	}
	return 0, Node{}
}

// write plays another process writing key: returns the new version.
func (h *harness) write(key string, value any, ttlSeconds int64) int64 {
	h.t.Helper()
	raw, _ := json.Marshal(value)
	res, err := h.store.KV(context.Background(), []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: raw, TTLSeconds: ttlSeconds}})
	if err != nil || !res[0].Applied {
		h.t.Fatalf("write %s: %v %+v", key, err, res)
	}
	return res[0].Version
}

func other(id int32, incarnation string) Node {
	return Node{ID: id, Host: "other.test", Port: 9999, Incarnation: incarnation, Since: 1, Version: "old"}
}

// recKV records every call it forwards.
type recKV struct {
	next  KV
	mu    sync.Mutex
	calls [][]queen.KVOp
}

func (r *recKV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	r.mu.Lock()
	r.calls = append(r.calls, ops)
	r.mu.Unlock()
	return r.next.KV(ctx, ops)
}

func (r *recKV) take() [][]queen.KVOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// faultKV fails, hangs or loses answers on demand.
type faultKV struct {
	next KV
	mode atomic.Int32 // faultNone, faultFail, faultHang, faultLoseAnswer, faultAuth
	hung chan struct{}
}

const (
	faultNone int32 = iota
	faultFail
	faultHang
	faultLoseAnswer
	faultAuth
)

func newFaultKV(next KV) *faultKV { return &faultKV{next: next, hung: make(chan struct{})} }

func (f *faultKV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	switch f.mode.Load() {
	case faultFail:
		return nil, &queen.Error{Kind: queen.KindTransport, Route: "POST /api/v1/kv", Message: "connection refused"}
	case faultAuth:
		return nil, &queen.Error{Kind: queen.KindUnauthorized, Route: "POST /api/v1/kv", Status: 401, Message: "bad token"}
	case faultHang:
		select {
		case <-f.hung:
		case <-ctx.Done():
			return nil, &queen.Error{Kind: queen.KindTimeout, Route: "POST /api/v1/kv", Message: ctx.Err().Error()}
		}
	case faultLoseAnswer:
		f.mode.Store(faultNone)
		if _, err := f.next.KV(ctx, ops); err != nil {
			return nil, err
		}
		return nil, &queen.Error{Kind: queen.KindTimeout, Route: "POST /api/v1/kv", Message: "answer lost"}
	}
	return f.next.KV(ctx, ops)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
