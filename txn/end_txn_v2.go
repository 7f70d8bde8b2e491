package txn

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// endTxnV2 answers an EndTxn v5 (KIP-890, transaction protocol 2), as
// Kafka's TransactionCoordinator.endTransaction does for a client of
// transaction version 2: every commit and every abort — an abort of an
// empty or decided transaction included — moves the producer to the next
// epoch (a fresh producer id at epoch 0 once the epoch reaches
// MaxInt16-1), written in the qk:txn: row by the decision's own
// compare-and-set and answered in the response. Every request of an older
// epoch is fenced from then on, so a late EndTxn or Produce of a decided
// transaction can never reach the next one. A retry of the decision (the
// epoch it moved from) is answered what it granted when it is the same
// decision, INVALID_TXN_STATE otherwise; an epoch that is neither is
// PRODUCER_FENCED.
func (m *Manager) endTxnV2(ctx context.Context, cl Client, req *kmsg.EndTxnRequest, resp *kmsg.EndTxnResponse) *kmsg.EndTxnResponse {
	m.saw(cl)
	k := Key{Identity: cl.Identity, ID: req.TransactionalID}
	t, _ := m.lock(k, false)
	if t == nil && m.cfg.Cluster {
		var code int16
		if t, code = m.loadRow(ctx, cl, k); t == nil {
			if code == kerr.InvalidTxnState.Code {
				code = kerr.InvalidProducerIDMapping.Code // no row: as below
			}
			resp.ErrorCode = code
			return resp
		}
	}
	if t == nil {
		// Single mode after a restart: the stage was the process's memory,
		// so a commit is INVALID_TXN_STATE and an abort 0 with nothing
		// written, as below v5; no epoch is moved (-1/-1 answered: the
		// producer keeps its own, and InitProducerId re-binds the id).
		if !req.Commit {
			return resp
		}
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp
	}
	defer t.mu.Unlock()
	if !t.bound {
		resp.ErrorCode = kerr.InvalidProducerIDMapping.Code
		return resp
	}
	m.adopt(t, cl.Owner)
	t.expire(m, m.clock.Now())
	var firstPage *queen.KVResult
	if m.cfg.Cluster && t.state == stateEmpty {
		// A leader may have opened the next transaction implicitly
		// (Shared): then a retry of the last decision is fenced, as Kafka's
		// coordinator, which hears of every implicit add, fences it.
		var code int16
		if code, firstPage = m.refresh(ctx, cl, t); code != 0 {
			resp.ErrorCode = code
			return resp
		}
	}
	decided := t.state == stateEmpty && t.last != outcomeNone
	retry := decided && t.fromPID >= 0 && req.ProducerID == t.fromPID && req.ProducerEpoch == t.fromEpoch
	switch {
	case req.ProducerID != t.pid && !retry:
		resp.ErrorCode = kerr.InvalidProducerIDMapping.Code
		return resp
	case !retry && (req.ProducerEpoch != t.epoch || t.fenced):
		resp.ErrorCode = kerr.ProducerFenced.Code
		return resp
	}
	answer := func(code int16) *kmsg.EndTxnResponse {
		resp.ErrorCode = code
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = t.pid, t.epoch
		}
		return resp
	}
	switch {
	case retry:
		return answer(t.repeatAnswer(req.Commit))
	case t.state == stateCommitting:
		if !req.Commit {
			return answer(kerr.InvalidTxnState.Code)
		}
		return answer(m.commitV2(ctx, cl, t)) // the bump was fixed by its first attempt
	case req.Commit && t.state != stateOngoing:
		// Empty, decided, or abortable after a cap or its timeout.
		return answer(kerr.InvalidTxnState.Code)
	}
	t.took(cl)
	if code := m.planBump(ctx, cl, t); code != 0 {
		return answer(code)
	}
	if req.Commit {
		if qs, ok := t.stage.(*queenStage); ok && firstPage != nil {
			// Read by this very EndTxn: nothing was staged since.
			qs.first = firstPage
		}
		return answer(m.commitV2(ctx, cl, t))
	}
	return answer(m.abortBumped(ctx, cl, t))
}

// commitV2 is commit with t's bump planned: one that neither decided nor
// stays in doubt (a poisoned stage, a move) drops the bump.
func (m *Manager) commitV2(ctx context.Context, cl Client, t *binding) int16 {
	code := m.commit(ctx, cl, t)
	if t.state != stateCommitting {
		t.next = nil
	}
	return code
}

// planBump fixes the producer id and epoch t's decision moves to: the
// next epoch, or a fresh producer id at epoch 0 when the epoch is
// exhausted (Kafka keeps MaxInt16 for fencing).
func (m *Manager) planBump(ctx context.Context, cl Client, t *binding) int16 {
	if t.epoch < math.MaxInt16-1 {
		t.next = &bump{pid: t.pid, epoch: t.epoch + 1}
		return 0
	}
	pid, err := m.cfg.IDs.Next(ctx, cl.Identity, m.kv(cl))
	if err != nil {
		m.log.Warn("EndTxn: a fresh producer id for an exhausted epoch could not be allocated", "transactional_id", t.key.ID, "err", err)
		return m.fault(err)
	}
	t.next = &bump{pid: pid, epoch: 0}
	return 0
}

// abortBumped is a KIP-890 abort: the stage is dropped and the row moves
// to the next epoch first, since that write is what fences the epoch left
// behind; a write that fails leaves everything as it was, for the retry.
func (m *Manager) abortBumped(ctx context.Context, cl Client, t *binding) int16 {
	if code := m.settle(ctx, cl, t, rowAborted); code != 0 {
		if t.fenced {
			m.decided(t, outcomeAborted)
		}
		t.next = nil
		return code
	}
	t.seq++
	m.decided(t, outcomeAborted)
	return 0
}

// settle writes t's row for a KIP-890 decision that writes no record (an
// abort, a commit of nothing): a compare-and-set on the version held,
// which must land before the answer. A lost one is this very decision
// landed on an earlier attempt (its answer lost), a transaction another
// node opened for this producer (cluster mode: the write is tried once more
// on that version), or another producer: PRODUCER_FENCED.
func (m *Manager) settle(ctx context.Context, cl Client, t *binding, state string) int16 {
	for attempt := 0; ; attempt++ {
		op := m.markerOp(t, state, t.seq+1, false)
		res, err := m.kv(cl).KV(ctx, []queen.KVOp{op})
		if err != nil {
			m.log.Warn("EndTxn: the qk:txn: row could not be written; nothing was decided", "transactional_id", t.key.ID, "err", err)
			return m.fault(err)
		}
		r := res[0]
		if r.Applied {
			t.version = r.Version
			return 0
		}
		mk, ok := readMarker(r.Value)
		pid, epoch := t.rowID()
		switch {
		case ok && mk.PID == pid && mk.Epoch == epoch && mk.State == state && mk.Seq == t.seq+1 && mk.Bumped && mk.FromPID == t.pid && mk.FromEpoch == t.epoch:
			t.version = r.Version
			return 0
		case ok && attempt == 0 && mk.PID == t.pid && mk.Epoch == t.epoch && mk.Seq == t.seq:
			t.version = r.Version
			continue
		}
		m.log.Warn("EndTxn fenced: another producer holds the transactional id", "transactional_id", t.key.ID, "producer_id", t.pid, "epoch", t.epoch)
		t.fenced = true
		return kerr.ProducerFenced.Code
	}
}
