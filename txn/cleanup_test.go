package txn

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
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

// recordingKV passes KV calls to a Queen and keeps each call's ops and
// results.
type recordingKV struct {
	Queen
	mu    sync.Mutex
	calls [][]queen.KVOp
	res   [][]queen.KVResult
}

func (r *recordingKV) KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error) {
	res, err := r.Queen.KV(ctx, ops)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls, r.res = append(r.calls, ops), append(r.res, res)
	return res, err
}

// The cleanup of a committed stage costs Queen no echo of what it staged
// (a delete answers the value it removed, §7.4): each stage row is put
// null with a ttl of a second, and is gone from the stage's reads once it
// expires; a pending index row is deleted.
func TestStageCleanupEchoesNoRecords(t *testing.T) {
	q := devbroker.Start(t, dev.Options{Logger: slog.New(slog.DiscardHandler)}, nil).Client
	rec := &recordingKV{Queen: q}
	ref := Ref{PID: 7, Epoch: 0, Txn: 1}
	prefix := queen.TxnStagePrefix("t", ref.PID, ref.Epoch, ref.Txn)
	ops, err := recordRows(prefix, stageBatch(0, 0, 100, 1024), 600)
	require.NoError(t, err)
	pend, _ := pendingOp("g", "in", 0, pendingRow{ID: "t", PID: 7, Txn: 1}, 600)
	off := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: prefix + "o:g:in:0", Value: []byte(`{"g":"g","q":"in","p":0,"offset":5,"metadata":"","pt":"consumer"}`), TTLSeconds: 600}
	_, err = q.KV(bg, append(append(ops, off), pend))
	require.NoError(t, err)
	stages := QueenStages{Clock: func() int64 { return time.Now().UnixMilli() }, Log: slog.New(slog.DiscardHandler)}
	s := stages.Open(Key{ID: "t"}, ref, rec)
	items, _, err := s.Contents(bg)
	require.NoError(t, err)
	require.Len(t, items, 100)
	s.(landedStage).Landed()
	s.Drop()
	require.Eventually(t, func() bool { return len(stageCleanups) == 0 }, 5*time.Second, time.Millisecond)

	rec.mu.Lock()
	last, res := rec.calls[len(rec.calls)-1], rec.res[len(rec.res)-1]
	rec.mu.Unlock()
	require.Len(t, last, len(ops)+2)
	for i, op := range last {
		if strings.HasPrefix(op.Key, queen.PrefixTxnPending) {
			require.Equal(t, queen.OpDelete, op.Op)
			continue
		}
		require.Equal(t, queen.OpPut, op.Op, op.Key)
		require.Equal(t, int64(1), op.TTLSeconds)
		require.Equal(t, "null", string(res[i].Value), "the answer echoes %d bytes", len(res[i].Value))
	}
	require.Eventually(t, func() bool {
		r, err := q.KV(bg, []queen.KVOp{stagePageOp(prefix, ""), {Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: queen.PrefixTxnPending}})
		return err == nil && len(r[0].Rows) == 0 && len(r[1].Rows) == 0
	}, 5*time.Second, 50*time.Millisecond)
}
