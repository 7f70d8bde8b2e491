package txn

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/queen"
)

// hungKV is a Queen whose every KV call waits for release (or its
// context), counting the calls waiting.
type hungKV struct {
	waiting atomic.Int32
	release chan struct{}
}

func (h *hungKV) KV(ctx context.Context, _ []queen.KVOp) ([]queen.KVResult, error) {
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	select {
	case <-h.release:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *hungKV) Transaction(context.Context, queen.TxnRequest) ([]queen.KVResult, error) {
	return nil, nil
}

// TestStageCleanupsAreBounded: against a Queen whose KV hangs, committed
// stages dropped faster than their cleanups finish hold at most
// maxStageCleanups goroutines; the rest are left to the rows' ttl, and the
// bound is free again once Queen answers.
func TestStageCleanupsAreBounded(t *testing.T) {
	h := &hungKV{release: make(chan struct{})}
	drop := func() {
		s := &queenStage{q: h, keys: []string{"qk:txnstage:a:1:0:0:0"}, landed: true}
		s.Drop()
	}
	for range 5 * maxStageCleanups {
		drop()
	}
	require.Eventually(t, func() bool { return h.waiting.Load() == maxStageCleanups }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	require.EqualValues(t, maxStageCleanups, h.waiting.Load(), "cleanups in flight past the bound")

	close(h.release)
	require.Eventually(t, func() bool { return len(stageCleanups) == 0 }, 5*time.Second, time.Millisecond)
	drop()
	require.Eventually(t, func() bool { return len(stageCleanups) == 0 }, 5*time.Second, time.Millisecond)
}
