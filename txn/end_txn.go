package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/queen"
)

// EndTxn answers an EndTxn v0–v3.
//
// Commit sends the whole stage as ONE POST /api/v1/transaction: kv op 0 is
// the fence, a put of qk:txn:<id> expecting the version this process holds,
// required, state committed; then the records; then each group's index row
// and the offset writes. What came back decides:
//
//   - committed: 0, the stage freed, the fence's new version held;
//   - rolled back on the fence (kv_precondition): PRODUCER_FENCED, nothing
//     was written and the stage is dropped — unless the row the fence met
//     is this very commit's, which landed on an earlier attempt whose
//     answer was lost: then 0. The row is known from the verdict's value
//     and version, or, when the verdict does not report them (§7.4 lets
//     them be null), from a read of the row;
//   - rolled back as duplicate: Queen already holds records of this
//     transaction (their keys are producer.DedupKeys), which only a landed
//     attempt of this commit can have stored: 0 if the row shows it;
//   - anything else (a rollback for another reason, a transport failure, a
//     429 or 5xx, an answer that broke the contract): COORDINATOR_NOT_AVAILABLE
//     with the stage kept, so that the client's retry can land it.
//
// A commit is never answered 0 unless the bundle is known to have landed.
// A commit of a transaction this process does not hold (a restart) is
// INVALID_TXN_STATE and writes nothing.
//
// Abort drops the stage, writes no record, and then puts the row's state
// aborted, best effort in single mode: the abort is true whether or not
// that lands. In cluster mode the row is what every node loads the
// transaction from, so an abort it did not reach is answered as not done
// (abortMoved; a failed write is retried by the client).
func (m *Manager) EndTxn(ctx context.Context, cl Client, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.Version >= 5 {
		return m.endTxnV2(ctx, cl, req, resp)
	}
	t, code := m.held(ctx, cl, req.TransactionalID, req.ProducerID, req.ProducerEpoch, fencedCode(req.Version >= 2))
	if t == nil {
		if code == kerr.InvalidTxnState.Code && !req.Commit {
			// Nothing of a transaction this process does not hold was ever
			// written: it is aborted.
			code = 0
		}
		resp.ErrorCode = code
		return resp
	}
	defer t.mu.Unlock()
	if t.lateEnd(cl) {
		// The EndTxn of the transaction before this one, delayed: answered
		// as that decided transaction answers a repeat, and the open one is
		// not touched.
		m.log.Info("a late EndTxn of a decided transaction was answered without touching the open one", "transactional_id", t.key.ID, "producer_id", t.pid, "epoch", t.epoch, "commit", req.Commit)
		resp.ErrorCode = t.repeatAnswer(req.Commit)
		return resp
	}
	t.took(cl)
	t.fromPID, t.fromEpoch = -1, -1
	if req.Commit {
		resp.ErrorCode = m.commit(ctx, cl, t)
	} else {
		resp.ErrorCode = m.abort(ctx, cl, t)
	}
	return resp
}

// repeatAnswer is what a repeated EndTxn of t's last decided transaction
// is answered: 0 for the same decision, else INVALID_TXN_STATE (Kafka's
// CompleteCommit and CompleteAbort).
func (t *binding) repeatAnswer(commit bool) int16 {
	if commit && t.last == outcomeCommitted || !commit && t.last == outcomeAborted {
		return 0
	}
	return kerr.InvalidTxnState.Code
}

func (m *Manager) commit(ctx context.Context, cl Client, t *binding) int16 {
	switch t.state {
	case stateEmpty:
		// Kafka answers a repeated commit 0 and a commit after an abort,
		// or of nothing begun, INVALID_TXN_STATE.
		if t.last == outcomeCommitted {
			return 0
		}
		return kerr.InvalidTxnState.Code
	case stateAbortable:
		return kerr.InvalidTxnState.Code
	}
	items, offsets, err := t.stage.Contents(ctx)
	var poisoned *poisonedError
	if errors.As(err, &poisoned) {
		// Cluster mode: a cap refused part of what the nodes staged.
		m.poison(t, poisoned.why)
		return kerr.InvalidTxnState.Code
	}
	if err != nil {
		m.log.Warn("transaction commit: the stage could not be read; it is kept for the retry", "transactional_id", t.key.ID, "err", err)
		t.state = stateCommitting
		return kerr.CoordinatorNotAvailable.Code
	}
	if len(items) == 0 && len(offsets) == 0 {
		if t.next != nil {
			// KIP-890: the epoch bump is the decision's one write.
			if code := m.settle(ctx, cl, t, rowCommitted); code != 0 {
				return code
			}
			t.seq++
			m.decided(t, outcomeCommitted)
			return 0
		}
		// Nothing to write, so no call (§8); the fence would be its only op.
		m.decided(t, outcomeCommitted)
		return 0
	}
	t.state = stateCommitting
	req := queen.TxnRequest{KV: m.commitOps(t, offsets)}
	if len(items) > 0 {
		req.Operations = []queen.TxnOperation{{Type: "push", Items: items}}
	}
	for attempt := 0; ; attempt++ {
		res, err := m.kv(cl).Transaction(ctx, req)
		var te *queen.TxnError
		switch {
		case err == nil && (!res[0].Applied || res[0].Version == 0):
			// A required op that did not apply rolls the unit back; a
			// committed answer saying otherwise is a broker this facade
			// cannot trust with the outcome.
			m.log.Error("transaction commit: the fence answered not applied in a committed bundle; outcome unknown, stage kept", "transactional_id", t.key.ID, "result", res[0])
			return kerr.CoordinatorNotAvailable.Code
		case err == nil:
			t.version = res[0].Version
		case errors.As(err, &te) && te.Fenced() && te.KVIndex == 0:
			mk, ok := readMarker(te.Value)
			version := te.Version
			if !ok || version == 0 {
				// §7.4 lets the verdict's value and version be null; the
				// row itself is what the contract promises, so read it:
				// a retry of a commit that landed meets its own row.
				row, rv, _, rerr := m.readRow(ctx, cl, t)
				if rerr != nil {
					m.log.Warn("transaction commit: the fence was lost and the qk:txn: row could not be read; the stage is kept for the retry", "transactional_id", t.key.ID, "err", rerr)
					return m.fault(rerr)
				}
				mk, ok = readMarker(row) // an absent row is nil: no marker
				version = rv
			}
			var landed bool
			var moved error
			if ok && m.cfg.Cluster {
				landed, moved = m.clusterFence(t, mk)
			}
			switch {
			case landed:
				// This transaction's commit landed, here or through another
				// owner; the answer was lost.
				t.version = version
			case moved != nil:
				m.log.Info("transaction commit: the row moved under this node for the same producer; the client finds the coordinator again", "transactional_id", t.key.ID, "err", moved)
				m.forget(t)
				return kerr.NotCoordinator.Code
			case ok && m.ownCommit(t, mk):
				// An earlier attempt of this very commit landed; its answer
				// was lost.
				t.version = version
			case ok && attempt == 0 && m.ownRow(t, mk):
				// The row moved by a write of this process whose answer
				// was lost (an abort's marker): the version is ours to
				// expect.
				t.version = version
				req.KV[0] = m.markerOp(t, rowCommitted, t.seq+1, true)
				continue
			default:
				m.log.Warn("transaction commit fenced: another producer holds the transactional id; nothing was written", "transactional_id", t.key.ID, "producer_id", t.pid, "epoch", t.epoch, "records", t.records, "kv_reason", te.KVReason, "version", version)
				t.fenced = true
				m.decided(t, outcomeAborted)
				return kerr.ProducerFenced.Code
			}
		case errors.As(err, &te) && te.Reason == queen.TxnReasonDuplicate:
			// Every staged record carries its producer id, epoch and
			// sequence as its Queen transactionId (producer.DedupKeys), and
			// only a commit of this transaction stores them: Queen already
			// holds some, so an earlier attempt of this commit landed and
			// its answer was lost. Queen applies the fence before the
			// records (§8), so that attempt normally meets the fence
			// first; a broker that checks the records first answers this.
			// The row says whether it was this very commit.
			if version, ok := m.landed(ctx, cl, t); ok {
				t.version = version
				break
			}
			m.log.Error("transaction commit: Queen holds records of this transaction already but its qk:txn: row does not show this commit; nothing was written, the stage is kept", "transactional_id", t.key.ID, "producer_id", t.pid, "epoch", t.epoch)
			return kerr.CoordinatorNotAvailable.Code
		default:
			m.log.Warn("transaction commit failed; the stage is kept for the client's retry", "transactional_id", t.key.ID, "records", t.records, "err", err)
			return m.fault(err)
		}
		break
	}
	m.log.Debug("transaction committed", "transactional_id", t.key.ID, "producer_id", t.pid, "epoch", t.epoch, "records", len(items), "offsets", len(offsets))
	t.seq++
	if l, ok := t.stage.(landedStage); ok {
		l.Landed()
	}
	m.decided(t, outcomeCommitted)
	return 0
}

// commitOps is the commit's kv rider: the fence at op 0, each group's
// index row, then the offset writes.
func (m *Manager) commitOps(t *binding, offsets []queen.KVOp) []queen.KVOp {
	now := m.now()
	ops := make([]queen.KVOp, 0, 1+t.indexOps()+len(offsets))
	ops = append(ops, m.markerOp(t, rowCommitted, t.seq+1, true))
	groups := make([]string, 0, len(t.groups))
	for id, g := range t.groups {
		if g.offsets > 0 {
			groups = append(groups, id)
		}
	}
	slices.Sort(groups)
	for _, id := range groups {
		ops = append(ops, coordinator.IndexWrite(id, t.groups[id].protocolType, now))
	}
	return append(ops, offsets...)
}

// landed reads t's row and reports whether it is this process's commit of
// t's current transaction, with the row's version.
func (m *Manager) landed(ctx context.Context, cl Client, t *binding) (int64, bool) {
	row, version, found, err := m.readRow(ctx, cl, t)
	if err != nil || !found {
		return 0, false
	}
	mk, ok := readMarker(row)
	return version, ok && m.ownCommit(t, mk)
}

// readRow reads t's qk:txn: row (§7: a live row comes back with its value
// and version). found is false when the row is absent; a row the answer
// left unread (truncated) is an error, never an absence.
func (m *Manager) readRow(ctx context.Context, cl Client, t *binding) (value []byte, version int64, found bool, err error) {
	op := rowOp(t.key.ID)
	key := op.Keys[0]
	res, err := m.kv(cl).KV(ctx, []queen.KVOp{op})
	if err != nil {
		return nil, 0, false, err
	}
	if len(res) != 1 {
		return nil, 0, false, fmt.Errorf("read of %s: %d results", key, len(res))
	}
	return rowOf(res[0], key)
}

// rowOf is the row key from a getMany result of it.
func rowOf(res queen.KVResult, key string) (value []byte, version int64, found bool, err error) {
	for _, r := range res.Rows {
		if r.Key == key {
			return r.Value, r.Version, true, nil
		}
	}
	if slices.Contains(res.Missing, key) {
		return nil, 0, false, nil
	}
	return nil, 0, false, fmt.Errorf("read of %s: the answer left the row unread", key)
}

// ownRow reports a row this process wrote for t's producer id and epoch
// (those a KIP-890 decision under way moves to).
func (m *Manager) ownRow(t *binding, mk marker) bool {
	pid, epoch := t.rowID()
	return mk.PID == pid && mk.Epoch == epoch && mk.Node == m.cfg.NodeID && mk.Incarnation == m.cfg.Incarnation
}

// ownCommit reports a row written by this process's commit of t's current
// transaction: same producer, epoch and transaction number, committed.
func (m *Manager) ownCommit(t *binding, mk marker) bool {
	return m.ownRow(t, mk) && mk.State == rowCommitted && mk.Seq == t.seq+1
}

// decided ends t's transaction: its stage dropped, the binding empty, and
// a KIP-890 bump under way applied.
func (m *Manager) decided(t *binding, how outcome) {
	m.release(t)
	t.state, t.last = stateEmpty, how
	if t.next != nil && !t.fenced {
		t.fromPID, t.fromEpoch = t.pid, t.epoch
		t.pid, t.epoch = t.next.pid, t.next.epoch
	}
	t.next = nil
	if how == outcomeCommitted {
		m.committed.Add(1)
	} else {
		m.aborted.Add(1)
	}
}

func (m *Manager) abort(ctx context.Context, cl Client, t *binding) int16 {
	switch t.state {
	case stateCommitting:
		// Kafka refuses an abort once the commit is under way; the
		// producer retries the commit.
		return kerr.InvalidTxnState.Code
	case stateEmpty:
		if t.last == outcomeAborted {
			return 0 // a repeated abort
		}
		return kerr.InvalidTxnState.Code
	}
	m.decided(t, outcomeAborted)
	op := m.markerOp(t, rowAborted, t.seq+1, false)
	t.seq++
	res, err := m.kv(cl).KV(ctx, []queen.KVOp{op})
	switch {
	case err != nil && m.cfg.Cluster:
		// The row still says the transaction is open, and its stage is in
		// Queen: a node loading the row would carry the aborted records
		// into the producer's next transaction. The client retries the
		// abort at the owner, which loads the row afresh.
		m.log.Warn("the abort's qk:txn: row could not be written; the client retries it", "transactional_id", t.key.ID, "err", err)
		m.forget(t)
		return m.fault(err)
	case err != nil:
		m.log.Info("the abort's qk:txn: row could not be written; the transaction is aborted regardless", "transactional_id", t.key.ID, "err", err)
	case res[0].Applied:
		t.version = res[0].Version
	default:
		if code, moved := m.abortMoved(ctx, cl, t, res[0].Value); moved {
			return code
		}
		m.log.Info("the abort's qk:txn: row lost its compare-and-set: another producer holds the transactional id", "transactional_id", t.key.ID, "version", res[0].Version)
	}
	return 0
}

// abortMoved answers an abort whose compare-and-set met row, written by
// another node for the same producer (cluster mode: the id moved and moved
// back, and both owners served it), and reports whether it did. The abort
// did not land: answered 0, the row would still hold the transaction open
// with its stage, and the next node to load it would commit the aborted
// records with the producer's next transaction. So: this very transaction
// committed there is INVALID_TXN_STATE (Kafka's answer to an abort after a
// commit); otherwise the binding is forgotten and the abort NOT_COORDINATOR,
// which the client retries at the owner, where the row is loaded afresh.
func (m *Manager) abortMoved(ctx context.Context, cl Client, t *binding, row []byte) (int16, bool) {
	if !m.cfg.Cluster {
		return 0, false
	}
	mk, ok := readMarker(row)
	if !ok {
		// The verdict did not carry the row (§7.4 lets it be null).
		if v, _, found, err := m.readRow(ctx, cl, t); err == nil && found {
			mk, ok = readMarker(v)
		}
	}
	if !ok || mk.PID != t.pid || mk.Epoch != t.epoch {
		return 0, false
	}
	m.forget(t)
	if mk.State == rowAborted && mk.Seq == t.seq {
		return 0, true // aborted through another node: the abort stands
	}
	if mk.State == rowCommitted && mk.Seq == t.seq {
		m.log.Warn("an abort met its transaction committed through another node", "transactional_id", t.key.ID, "producer_id", t.pid, "epoch", t.epoch)
		return kerr.InvalidTxnState.Code, true
	}
	m.log.Info("the abort's qk:txn: row moved under this node for the same producer; the client retries the abort at the owner", "transactional_id", t.key.ID, "state", mk.State)
	return kerr.NotCoordinator.Code, true
}
