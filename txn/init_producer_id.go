package txn

import (
	"context"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// InitProducerID answers an InitProducerId v0–v4 that carries a
// transactional id (the idempotent branch, and cluster mode's refusal, are
// the node's). The id is claimed in qk:txn:<id> by compare-and-set: a put
// expecting the version held (0, absent, for an id this process does not
// hold); a lost claim carries the winner's row, and one more put expecting
// its version at epoch+1 takes the id over — the bump that fences the
// previous producer; losing that too is CONCURRENT_TRANSACTIONS, and the
// retry is the client's. The producer id is the row's, so a transactional
// id keeps its producer id across restarts, at the next epoch; only an
// exhausted epoch (or no row) takes a fresh one. An open transaction of
// the fenced epoch is dropped: its commit could no longer land anyway,
// since the version it would expect has moved.
//
// v3+ may carry the producer's current id and epoch (KIP-360): then the
// id is bumped only if they are the row's, a retried bump is answered what
// the first one granted, and anything else is fenced (PRODUCER_FENCED from
// v4, INVALID_PRODUCER_EPOCH below).
func (m *Manager) InitProducerID(ctx context.Context, cl Client, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	m.saw(cl)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	fail := func(code int16) *kmsg.InitProducerIDResponse {
		resp.ErrorCode = code
		return resp
	}
	if req.TransactionalID == nil || *req.TransactionalID == "" {
		return fail(kerr.InvalidRequest.Code) // the node's branch; never reaches here
	}
	id := *req.TransactionalID
	if len(queen.TxnKey(id)) > queen.MaxKeyBytes {
		// No row could hold it; refused before anything is claimed.
		return fail(kerr.InvalidRequest.Code)
	}
	timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
	if req.TransactionTimeoutMillis <= 0 || timeout > m.lim.MaxTimeout {
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	fenced := fencedCode(req.Version >= 4)
	bump := req.ProducerID >= 0 && req.ProducerEpoch >= 0 // KIP-360, v3+

	t, code := m.lock(Key{Identity: cl.Identity, ID: id}, true)
	if t == nil {
		return fail(code)
	}
	defer t.mu.Unlock()
	if bump && t.bound {
		switch {
		case req.ProducerID == t.pid && req.ProducerEpoch == t.bumpedFrom && t.epoch == t.bumpedFrom+1 && !t.fenced:
			// The same bump, retried: what it granted.
			resp.ProducerID, resp.ProducerEpoch = t.pid, t.epoch
			return resp
		case req.ProducerID != t.pid || req.ProducerEpoch != t.epoch || t.fenced:
			return fail(fenced)
		}
	}

	kv := m.kv(cl)
	var cur *marker // the row as known; nil claims afresh
	expect, seq := int64(0), uint64(0)
	if t.bound {
		cur, expect, seq = &marker{PID: t.pid, Epoch: t.epoch}, t.version, t.seq
	}
	for attempt := 0; ; attempt++ {
		next := marker{State: rowOpen, Seq: seq}
		if cur != nil && cur.Epoch < math.MaxInt16-1 {
			next.PID, next.Epoch = cur.PID, cur.Epoch+1
		} else {
			pid, err := m.cfg.IDs.Next(ctx, cl.Identity, kv)
			if err != nil {
				return m.claimFailed(t, fail, id, err)
			}
			next.PID = pid
		}
		claim := marker{PID: next.PID, Epoch: next.Epoch, State: next.State, Seq: next.Seq, Node: m.cfg.NodeID, Incarnation: m.cfg.Incarnation, TS: m.now()}
		if m.cfg.Cluster {
			// A leader that opens a transaction implicitly (KIP-890) takes
			// its timeout from the row.
			claim.TimeoutMs = timeout.Milliseconds()
		}
		op := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TxnKey(id), Forever: true, Expect: &expect, Value: claim.json()}
		res, err := kv.KV(ctx, []queen.KVOp{op})
		if err != nil {
			return m.claimFailed(t, fail, id, err)
		}
		if r := res[0]; r.Applied {
			from := int16(-1)
			if bump && next.PID == req.ProducerID {
				from = req.ProducerEpoch
			}
			m.bind(t, cl, next, r.Version, timeout, from)
			resp.ProducerID, resp.ProducerEpoch = t.pid, t.epoch
			return resp
		} else if attempt == 0 {
			// Lost: the verdict is the live row (version 0 when absent).
			expect, cur = r.Version, nil
			if r.Version != 0 {
				if mk, ok := readMarker(r.Value); ok {
					cur, seq = &mk, mk.Seq
				} else {
					m.log.Warn("a qk:txn: row holds a value that is not a transactional id's; claiming over it", "transactional_id", id, "version", r.Version)
				}
			}
			if bump && (cur == nil || cur.PID != req.ProducerID || cur.Epoch != req.ProducerEpoch) {
				// The producer asks to bump an epoch the row no longer names.
				if !t.bound {
					m.forget(t)
				}
				return fail(fenced)
			}
			continue
		}
		if !t.bound {
			m.forget(t)
		}
		m.log.Info("InitProducerId lost the transactional id's compare-and-set twice: CONCURRENT_TRANSACTIONS", "transactional_id", id)
		return fail(kerr.ConcurrentTransactions.Code)
	}
}

// claimFailed answers a claim that Queen failed; an id this process did
// not hold before is not kept.
func (m *Manager) claimFailed(t *binding, fail func(int16) *kmsg.InitProducerIDResponse, id string, err error) *kmsg.InitProducerIDResponse {
	m.log.Warn("InitProducerId: claiming the transactional id failed", "transactional_id", id, "err", err)
	if !t.bound {
		m.forget(t)
	}
	return fail(m.fault(err))
}

// bind installs a won claim on t: the producer id and epoch, the row
// version a commit will expect; from is the epoch a KIP-360 bump moved
// from (-1 for a claim that fenced whoever held the id, so that no fenced
// producer can pass for a retried bump). A transaction the previous epoch
// had open is dropped, never written.
func (m *Manager) bind(t *binding, cl Client, won marker, version int64, timeout time.Duration, from int16) {
	if t.holds() {
		m.log.Info("an open transaction of a fenced epoch was aborted: its stage is dropped and never written", "transactional_id", t.key.ID, "producer_id", t.pid, "epoch", t.epoch, "records", t.records)
	}
	m.release(t)
	t.bumpedFrom = from
	t.fromPID, t.fromEpoch, t.next = -1, -1, nil
	t.bound, t.fenced = true, false
	t.pid, t.epoch, t.version, t.seq = won.PID, won.Epoch, version, won.Seq
	t.timeout, t.state, t.last = timeout, stateEmpty, outcomeNone
	m.adopt(t, cl.Owner)
}
