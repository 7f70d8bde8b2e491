package producer

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/queen"
)

// counterKV is one tenant's qk:producerids row behind the compare-and-set
// queen-api §7 describes. While hung is open a call blocks (a black hole)
// until hung closes or its context ends; entered hears of every call.
type counterKV struct {
	mu      sync.Mutex
	version int64
	value   json.RawMessage
	calls   int
	hung    chan struct{}
	entered chan struct{} // a call arrived
	applied chan struct{} // a reservation was written
}

func newCounterKV() *counterKV {
	return &counterKV{entered: make(chan struct{}, 64), applied: make(chan struct{}, 64)}
}

// hang makes every later call block until the returned release runs.
func (kv *counterKV) hang() (release func()) {
	ch := make(chan struct{})
	kv.mu.Lock()
	kv.hung = ch
	kv.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

func (kv *counterKV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	kv.mu.Lock()
	kv.calls++
	hung := kv.hung
	kv.mu.Unlock()
	select {
	case kv.entered <- struct{}{}:
	default:
	}
	if hung != nil {
		select {
		case <-hung:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	op := ops[0]
	if *op.Expect != kv.version {
		return []queen.KVResult{{Version: kv.version, Value: kv.value}}, nil
	}
	kv.version++
	kv.value = op.Value
	select {
	case kv.applied <- struct{}{}:
	default:
	}
	return []queen.KVResult{{Applied: true, Version: kv.version}}, nil
}

func (kv *counterKV) reservations() int {
	kv.mu.Lock()
	defer kv.mu.Unlock()
	return kv.calls
}

// drain takes n ids from a healthy KV.
func drain(t *testing.T, a *IDs, scope string, kv *counterKV, n int) []int64 {
	t.Helper()
	ids := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		id, err := a.Next(context.Background(), scope, kv)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

// waitApplied waits for the KV's next written reservation. The deadline
// only turns a reservation that never comes into a failure.
func waitApplied(t *testing.T, kv *counterKV, why string) {
	t.Helper()
	select {
	case <-kv.applied:
	case <-time.After(10 * time.Second):
		t.Fatalf("no reservation written: %s", why)
	}
}

// TestIDsReserveAheadOfNeed (issue 11, item 7): once a block is half spent
// the next one is reserved in the background, so that when the KV then
// hangs, the ids of the block after are still handed out without a KV
// call. The hang is released only after every Next returned: answered
// before the hang ends, whatever the timing.
func TestIDsReserveAheadOfNeed(t *testing.T) {
	a, kv := NewIDs(), newCounterKV()
	first := drain(t, a, "s", kv, IDBlock/2+1)
	waitApplied(t, kv, "the first block")
	waitApplied(t, kv, "the second block, reserved while the first is half spent")
	// What the node holds now is what it can hand out with the KV hung
	// (/metrics: queen_kafka_producer_ids_reserved).
	require.Eventually(t, func() bool { return a.Reserved() == 2*IDBlock-int64(len(first)) }, 10*time.Second, time.Millisecond,
		"the rest of the first block and the whole second one")

	release := kv.hang()
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := make(map[int64]bool)
	for _, id := range first {
		seen[id] = true
	}
	for i := len(first); i < 2*IDBlock; i++ {
		id, err := a.Next(ctx, "s", kv)
		require.NoError(t, err, "id %d under a hung KV", i)
		require.False(t, seen[id], "id %d handed out twice", id)
		seen[id] = true
	}
	release()
	id, err := a.Next(ctx, "s", kv)
	require.NoError(t, err)
	require.False(t, seen[id])
	require.GreaterOrEqual(t, id, int64(2*IDBlock))
}

// TestIDsScopesDoNotWaitForEachOther (issue 11, item 12): a reservation
// hung in one scope (one tenant's KV) does not hold any lock another
// scope's Next needs.
func TestIDsScopesDoNotWaitForEachOther(t *testing.T) {
	a := NewIDs()
	stuck, healthy := newCounterKV(), newCounterKV()
	release := stuck.hang()
	defer release()
	stuckDone := make(chan error, 1)
	go func() {
		_, err := a.Next(context.Background(), "tenant:a", stuck)
		stuckDone <- err
	}()
	<-stuck.entered // tenant a's reservation is in its KV call, hung

	type answer struct {
		id  int64
		err error
	}
	other := make(chan answer, 1)
	go func() {
		id, err := a.Next(context.Background(), "tenant:b", healthy)
		other <- answer{id, err}
	}()
	select {
	case got := <-other:
		require.NoError(t, got.err)
		require.Equal(t, int64(0), got.id)
	case <-time.After(10 * time.Second):
		// The deadline only turns a wait that never ends into a failure.
		t.Fatal("tenant b's Next waits for tenant a's hung reservation")
	}
	select {
	case err := <-stuckDone:
		t.Fatalf("tenant a's Next returned %v with its KV still hung", err)
	default:
	}
	release()
	require.NoError(t, <-stuckDone)
}

// TestIDsCallerGivesUp: a caller whose context ends stops waiting, and the
// reservation it started still lands for the next caller.
func TestIDsCallerGivesUp(t *testing.T) {
	a, kv := NewIDs(), newCounterKV()
	release := kv.hang()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.Next(ctx, "s", kv)
		done <- err
	}()
	<-kv.entered
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	release()
	waitApplied(t, kv, "the reservation the caller gave up on")
	id, err := a.Next(context.Background(), "s", kv)
	require.NoError(t, err)
	require.Equal(t, int64(0), id)
	require.Equal(t, 1, kv.reservations())
}
