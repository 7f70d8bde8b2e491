package txn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/queen"
)

// Cluster mode's owner side (issue 9). The transactional id's owner on the
// rendezvous ring holds the binding as in single mode; what differs:
//
//   - announce: a transaction opens by writing the qk:txn: row "ongoing"
//     (compare-and-set on the version held), with its start and timeout,
//     so that the nodes that receive its records (Shared) stage them under
//     its number, and any node can tell its deadline;
//   - load: a request for an id this process does not hold (it restarted,
//     or the id moved here) binds it from the row, an ongoing transaction
//     included, so a commit resumed anywhere lands what Queen holds;
//   - the stage is QueenStages: read at EndTxn(commit) with getPrefix and
//     sent, with the offsets, as the one POST /api/v1/transaction.

// stageMargin is how much longer than its transaction's timeout a stage
// row lives: the clock skew between a node and Queen it tolerates.
const stageMargin = 120 * time.Second

// StageTTL is the ttlSeconds of a stage row of a transaction of timeout.
func StageTTL(timeout time.Duration) int64 { return int64((timeout + stageMargin) / time.Second) }

// errNotOwner: the row moved under this process for the producer it holds
// (another owner wrote it): the binding is stale, and the client must find
// the coordinator again.
var errNotOwner = errors.New("the transactional id's row was written by another node")

// announce writes t's row "ongoing" for the transaction it opens. A lost
// compare-and-set is PRODUCER_FENCED (fenced) when another producer holds
// the id, and NOT_COORDINATOR when another node wrote it for this producer
// (the id moved and moved back): the binding is forgotten, and the client's
// retry at the owner loads the row afresh.
func (m *Manager) announce(ctx context.Context, cl Client, t *binding, now time.Time, fenced int16) int16 {
	t.begun = now
	op := m.markerOp(t, rowOngoing, t.seq, false)
	res, err := m.kv(cl).KV(ctx, []queen.KVOp{op})
	if err != nil {
		m.log.Warn("opening a transaction: the qk:txn: row could not be written", "transactional_id", t.key.ID, "err", err)
		return m.fault(err)
	}
	if r := res[0]; r.Applied {
		t.version = r.Version
		return 0
	} else if mk, ok := readMarker(r.Value); ok && mk.PID == t.pid && mk.Epoch == t.epoch && mk.State == rowOngoing && mk.Seq == t.seq && m.cfg.TransactionV2 {
		// A leader opened this very transaction implicitly (KIP-890):
		// it is the one this request joins.
		t.version = r.Version
		t.begun = time.UnixMilli(mk.Begin)
		return 0
	} else if ok && mk.PID == t.pid && mk.Epoch == t.epoch {
		m.log.Info("opening a transaction: the qk:txn: row moved under this node; the binding is reloaded on the next request", "transactional_id", t.key.ID)
		m.forget(t)
		return kerr.NotCoordinator.Code
	}
	t.fenced = true
	return fenced
}

// load binds k from its qk:txn: row for a request of producer pid at
// epoch, and returns the binding locked; refused, nil and the code.
func (m *Manager) load(ctx context.Context, cl Client, k Key, pid int64, epoch int16, fenced int16) (*binding, int16) {
	t, code := m.loadRow(ctx, cl, k)
	if t == nil {
		return nil, code
	}
	return m.checked(cl, t, pid, epoch, fenced)
}

// loadRow binds k from its qk:txn: row, whatever producer asks, and
// returns the binding locked; nil and the code when there is no row to
// bind (INVALID_TXN_STATE) or it could not be read.
func (m *Manager) loadRow(ctx context.Context, cl Client, k Key) (*binding, int16) {
	res, err := m.kv(cl).KV(ctx, []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{queen.TxnKey(k.ID)}}})
	if err != nil {
		m.log.Warn("reading a transactional id's row failed", "transactional_id", k.ID, "err", err)
		return nil, m.fault(err)
	}
	if res[0].Truncated {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	if len(res[0].Rows) == 0 {
		return nil, kerr.InvalidTxnState.Code
	}
	row := res[0].Rows[0]
	mk, ok := readMarker(row.Value)
	if !ok {
		return nil, kerr.InvalidTxnState.Code
	}
	t, code := m.lock(k, true)
	if t == nil {
		return nil, code
	}
	if !t.bound {
		t.bound, t.fenced, t.bumpedFrom = true, false, -1
		t.pid, t.epoch, t.version, t.seq = mk.PID, mk.Epoch, row.Version, mk.Seq
		t.fromPID, t.fromEpoch, t.next = -1, -1, nil
		t.timeout = time.Duration(mk.TimeoutMs) * time.Millisecond
		if t.timeout <= 0 {
			t.timeout = m.lim.MaxTimeout
		}
		t.state, t.last = stateEmpty, outcomeNone
		switch mk.State {
		case rowOngoing:
			m.openFromRow(cl, t, mk)
		case rowCommitted:
			t.last = outcomeCommitted
		case rowAborted:
			t.last = outcomeAborted
		}
		if mk.Bumped && t.last != outcomeNone {
			t.fromPID, t.fromEpoch = mk.FromPID, mk.FromEpoch
		}
		m.log.Info("transactional id loaded from its row", "transactional_id", k.ID, "producer_id", t.pid, "epoch", t.epoch, "state", mk.State, "seq", t.seq)
	}
	return t, 0
}

// openFromRow makes t's transaction the one its row says is open (state
// "ongoing", transaction seq+1), whichever node opened it: the stage is
// the one Queen holds. Who took part is not known here, so any connection
// may end it.
func (m *Manager) openFromRow(cl Client, t *binding, mk marker) {
	m.open.Add(1)
	t.state = stateOngoing
	t.begun = time.UnixMilli(mk.Begin)
	t.deadline = t.begun.Add(t.timeout)
	t.stage = m.stages.Open(t.key, m.ref(t), m.kv(cl))
}

// refresh reads t's row (t empty, cluster mode): a transaction a
// partition leader or a group coordinator opened implicitly for t's
// producer (KIP-890, Shared.open) becomes t's open transaction. Any other
// row is left to the decision's compare-and-set to meet.
//
// The same call reads the first page of the stage that transaction would
// have (its name is known from t before the row is), returned when the row
// opened it: an EndTxn that goes on to commit it hands the page to the
// stage (queenStage.first), so the commit reads nothing more before its
// Queen transaction. The page is only as fresh as this call: any later
// request may stage more, so it serves this EndTxn alone.
func (m *Manager) refresh(ctx context.Context, cl Client, t *binding) (int16, *queen.KVResult) {
	prefix := queen.TxnStagePrefix(t.key.ID, t.pid, t.epoch, t.seq+1)
	res, err := m.kv(cl).KV(ctx, []queen.KVOp{rowOp(t.key.ID), stagePageOp(prefix, "")})
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("read of %s and its stage: %d results", queen.TxnKey(t.key.ID), len(res))
	}
	if err != nil {
		m.log.Warn("reading a transactional id's row failed", "transactional_id", t.key.ID, "err", err)
		return m.fault(err), nil
	}
	row, version, found, err := rowOf(res[0], queen.TxnKey(t.key.ID))
	if err != nil {
		m.log.Warn("reading a transactional id's row failed", "transactional_id", t.key.ID, "err", err)
		return m.fault(err), nil
	}
	if !found {
		return 0, nil
	}
	if mk, ok := readMarker(row); ok && mk.PID == t.pid && mk.Epoch == t.epoch && mk.State == rowOngoing && mk.Seq == t.seq {
		t.version = version
		m.openFromRow(cl, t, mk)
		t.expire(m, m.clock.Now())
		if qs, ok := t.stage.(*queenStage); ok && qs.prefix == prefix {
			return 0, &res[1]
		}
	}
	return 0, nil
}

// stagePageOp reads one page of the stage under prefix, after a key.
func stagePageOp(prefix, after string) queen.KVOp {
	return queen.KVOp{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: prefix, Limit: stagePage, After: after}
}

// DropUnowned forgets every transactional id owns says this node no
// longer owns (an ownership move): what it held stays in Queen (the row,
// the stage) for the new owner to load, and if the id comes back it is
// loaded afresh rather than trusted. A binding busy with a call to Queen is
// left to its compare-and-set, which a move makes fail.
func (m *Manager) DropUnowned(owns func(id string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.txns {
		if owns(t.key.ID) || !t.mu.TryLock() {
			continue
		}
		m.removeLocked(t)
		t.mu.Unlock()
	}
}

// clusterFence decides a commit whose fence lost in cluster mode, given
// the row it met: landed when that row is this very transaction committed
// (by this node or another owner that served the producer's retry: the
// row is written only by a commit of the transaction number it names), or
// errNotOwner when another node moved the row of this producer.
func (m *Manager) clusterFence(t *binding, mk marker) (landed bool, err error) {
	pid, epoch := t.rowID()
	if mk.PID == pid && mk.Epoch == epoch && mk.State == rowCommitted && mk.Seq == t.seq+1 {
		return true, nil
	}
	if mk.PID != t.pid || mk.Epoch != t.epoch {
		return false, nil
	}
	return false, errNotOwner
}

// poisonedError is a stage that can never commit: a cap refused part of
// it, here or at the node that staged it.
type poisonedError struct{ why string }

func (e *poisonedError) Error() string { return "the transaction is past a cap: " + e.why }

// QueenStages is cluster mode's Stages: what Shared staged in Queen under
// qk:txnstage:, read by the owner at EndTxn(commit).
type QueenStages struct {
	Limits Limits // the per-transaction caps a commit is checked against
	Clock  func() int64
	Log    *slog.Logger
}

// Open names the stage of transaction ref of k.
func (s QueenStages) Open(k Key, ref Ref, q Queen) Stage {
	return &queenStage{q: q, prefix: queen.TxnStagePrefix(k.ID, ref.PID, ref.Epoch, ref.Txn), ref: pendingRow{ID: k.ID, PID: ref.PID, Epoch: ref.Epoch, Txn: ref.Txn}, lim: s.Limits.withDefaults(), now: s.Clock, log: s.Log}
}

type queenStage struct {
	q      Queen
	prefix string
	ref    pendingRow // the transaction, as its pending keys name it
	lim    Limits
	now    func() int64
	log    *slog.Logger

	first   *queen.KVResult // the stage's first page, read with the row by this EndTxn (refresh); used once
	read    bool
	items   []queen.PushItem
	offsets []queen.KVOp
	keys    []string // every row read: the cleanup after the commit
	landed  bool     // the commit of these rows is known to have landed
}

// landed is what a stage may learn: its commit landed, so the rows it read
// are garbage now. A stage dropped without it (fenced, moved, expired)
// leaves its rows to their ttl, since another owner may still commit them.
type landedStage interface{ Landed() }

// Landed marks the rows read as committed.
func (s *queenStage) Landed() { s.landed = true }

// stageRecords is the value of an r: row (stagerows.go): row n of one
// batch's records, as whole [dedup key, envelope] pairs (Pairs, the JSON
// array's text) or, in the base64 form, a piece of the array's text cut
// anywhere (Data). Bytes, on row 0, is what the batch weighs against the
// byte caps.
type stageRecords struct {
	Topic     string
	Partition int32
	Bytes     int64
	Chunks    int
	Data      []byte
	Pairs     []byte
}

// stageChunkBytes is the array text one r: row carries: base64 makes it
// 60,000 bytes, which with the rest of the value stays under §7.3's 64 KiB.
const stageChunkBytes = 45_000

// stageOffset is the value of an o: row.
type stageOffset struct {
	Group        string `json:"g"`
	Topic        string `json:"q"`
	Partition    int32  `json:"p"`
	Offset       int64  `json:"offset"`
	Metadata     string `json:"metadata"`
	ProtocolType string `json:"pt"`
}

// stagePage is how many rows one getPrefix reads: 64 rows of at most
// 64 KiB each is the route's 4 MiB read budget.
const stagePage = 64

func (s *queenStage) AddRecords(context.Context, string, int32, []json.RawMessage, []string) error {
	return errors.New("cluster mode stages records through Shared, at the node that received them")
}

func (s *queenStage) SetOffset(context.Context, string, queen.KVOp) error {
	return errors.New("cluster mode stages offsets through Shared, at the group's coordinator")
}

// Contents reads the whole stage, page by page, once: a retried commit
// sends the same bundle. The caps of the transaction are checked over
// everything every node staged.
func (s *queenStage) Contents(ctx context.Context) ([]queen.PushItem, []queen.KVOp, error) {
	if s.read {
		return s.items, s.offsets, nil
	}
	var (
		items   []queen.PushItem
		offs    []stageOffset
		keys    []string
		bytes   int64
		after   string
		poison  string
		ptypes  = map[string]string{}
		offsetN = map[string]bool{}
		batch   batchAssembly
	)
	for {
		var r queen.KVResult
		if s.first != nil && after == "" {
			r = *s.first // read with the row by this EndTxn (refresh)
			s.first = nil
		} else {
			res, err := s.q.KV(ctx, []queen.KVOp{stagePageOp(s.prefix, after)})
			if err != nil {
				return nil, nil, fmt.Errorf("reading the transaction's stage: %w", err)
			}
			r = res[0]
		}
		for _, row := range r.Rows {
			keys = append(keys, row.Key)
			rest := strings.TrimPrefix(row.Key, s.prefix)
			switch {
			case strings.HasPrefix(rest, "r:"):
				v, err := decodeStageRecords(row.Value)
				if err != nil {
					return nil, nil, fmt.Errorf("stage row %q: %w", row.Key, err)
				}
				cut := strings.LastIndexByte(rest, ':')
				chunk, err := strconv.Atoi(rest[cut+1:])
				if err != nil {
					return nil, nil, fmt.Errorf("stage row %q: no chunk number", row.Key)
				}
				if items, err = batch.add(items, rest[:cut], chunk, v); err != nil {
					return nil, nil, fmt.Errorf("stage row %q: %w", row.Key, err)
				}
				bytes += v.Bytes
			case strings.HasPrefix(rest, "o:"):
				var v stageOffset
				if err := json.Unmarshal(row.Value, &v); err != nil {
					return nil, nil, fmt.Errorf("stage row %q: %w", row.Key, err)
				}
				offs = append(offs, v)
				// Its pending row goes with it after the commit (the row
				// names this transaction, ended either way).
				keys = append(keys, queen.TxnPendingKey(v.Group, v.Topic, v.Partition, s.ref.ref()))
				ptypes[v.Group] = v.ProtocolType
				offsetN[row.Key] = true
			case strings.HasPrefix(rest, "x:"):
				poison = "refused at node " + strings.TrimPrefix(rest, "x:")
			}
		}
		if !r.Truncated {
			break
		}
		var ok bool
		if after, ok = r.NextCursor(after); !ok {
			return nil, nil, errors.New("reading the transaction's stage: a truncated page without a cursor")
		}
	}
	if batch.id != "" {
		// A batch whose last chunks are missing: a staging write that
		// failed half way, which its producer was told failed.
		return nil, nil, &poisonedError{"a batch staged in part"}
	}
	s.keys = keys
	switch {
	case poison != "":
		return nil, nil, &poisonedError{poison}
	case len(items) > s.lim.MaxRecords:
		return nil, nil, &poisonedError{"QUEEN_KAFKA_TXN_MAX_RECORDS"}
	case bytes > s.lim.MaxBytes:
		return nil, nil, &poisonedError{"QUEEN_KAFKA_TXN_MAX_BYTES"}
	case itemsBody(items) > s.lim.bodyRoom():
		return nil, nil, &poisonedError{"QUEEN_KAFKA_QUEEN_MAX_BODY_BYTES"}
	case 1+len(ptypes)+len(offsetN) > riderOps:
		return nil, nil, &poisonedError{"more than 62 offsets (less one per further group)"}
	}
	now := s.now()
	groups := make([]string, 0, len(ptypes))
	for g := range ptypes {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	ops := make([]queen.KVOp, 0, len(groups)+len(offs))
	for _, g := range groups {
		ops = append(ops, coordinator.IndexWrite(g, ptypes[g], now))
	}
	for _, o := range offs {
		key, code := coordinator.OffsetKey(o.Group, o.Topic, o.Partition)
		if code != 0 {
			return nil, nil, &poisonedError{"an offset key past the key ceiling"}
		}
		ops = append(ops, coordinator.OffsetWrite(key, o.Offset, o.Metadata, now))
	}
	s.items, s.offsets, s.read = items, ops, true
	return items, ops, nil
}

// stageCleanups bounds the committed stages being cleaned up at once, in
// the process (one facade, one transaction manager): each holds a goroutine
// and its keys for up to 30 s against a Queen that does not answer.
var stageCleanups = make(chan struct{}, maxStageCleanups)

const maxStageCleanups = 64

// Drop forgets the stage; the rows of a commit that landed are deleted
// best effort (their key names a decided transaction, so none is read
// again whether or not this lands, and each expires with its ttl), in the
// background, maxStageCleanups at once at most.
func (s *queenStage) Drop() {
	keys, q, landed, log := s.keys, s.q, s.landed, s.log
	*s = queenStage{}
	if !landed || len(keys) == 0 || q == nil {
		return
	}
	select {
	case stageCleanups <- struct{}{}:
	default:
		// As many cleanups as the bound are on their way (Queen is slow or
		// hung): this one is left to the rows' ttl rather than piling up
		// a goroutine per commit.
		return
	}
	go func() {
		defer func() { <-stageCleanups }()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for len(keys) > 0 {
			n := min(len(keys), 200)
			ops := make([]queen.KVOp, 0, n)
			for _, k := range keys[:n] {
				ops = append(ops, cleanupOp(k))
			}
			if _, err := q.KV(ctx, ops); err != nil {
				if log != nil {
					log.Info("cleaning up a committed transaction's stage failed; its rows expire with their ttl", "err", err)
				}
				return
			}
			keys = keys[n:]
		}
	}()
}

// cleanupOp removes one row of a committed stage. A stage row is put null
// with a ttl of a second rather than deleted: a delete's answer echoes
// the value it removed (§7.4), every staged byte once more, where a put's
// echoes the null; the row is never read again either way (§7.2: an
// expired row is no row), and Queen removes it when it expires. The
// pending index's rows, read by getPrefix until they go, are deleted.
func cleanupOp(key string) queen.KVOp {
	if !strings.HasPrefix(key, queen.PrefixTxnStage) {
		return queen.KVOp{Op: queen.OpDelete, NS: queen.Namespace, Key: key}
	}
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: json.RawMessage("null"), TTLSeconds: 1}
}

// batchAssembly joins the rows of one staged batch, which getPrefix
// returns adjacent and in order (their keys differ only in the row
// number), all in one form.
type batchAssembly struct {
	id    string
	next  int
	v     stageRecords
	array []byte   // the base64 form: the array's text so far
	pairs [][]byte // the array form: each row's pairs
}

// add takes row chunk of batch id; when it completes the batch, the
// batch's records are appended to items.
func (a *batchAssembly) add(items []queen.PushItem, id string, chunk int, v stageRecords) ([]queen.PushItem, error) {
	if chunk == 0 {
		if a.id != "" {
			return items, &poisonedError{"a batch staged in part"}
		}
		a.id, a.next, a.v, a.array, a.pairs = id, 0, v, nil, nil
	}
	// Rows of both forms in one batch: a retry written by a node of the
	// other build over fewer rows than the first write took.
	if a.id != id || a.next != chunk || v.Chunks != a.v.Chunks || (v.Pairs == nil) != (a.v.Pairs == nil) {
		return items, &poisonedError{"a batch staged in part"}
	}
	if v.Pairs != nil {
		a.pairs = append(a.pairs, v.Pairs)
	} else {
		a.array = append(a.array, v.Data...)
	}
	a.next++
	if a.next < a.v.Chunks {
		return items, nil
	}
	arrays := a.pairs
	if a.v.Pairs == nil {
		arrays = [][]byte{a.array}
	}
	part := strconv.FormatInt(int64(a.v.Partition), 10)
	for _, array := range arrays {
		keys, payloads, err := decodePairs(array)
		if err != nil {
			return items, err
		}
		for i, p := range payloads {
			items = append(items, queen.PushItem{Queue: a.v.Topic, Partition: part, Payload: p, TransactionID: keys[i]})
		}
	}
	*a = batchAssembly{}
	return items, nil
}

// itemsBody is what items add to their commit body.
func itemsBody(items []queen.PushItem) int64 {
	var n int64
	for _, it := range items {
		n += itemBytes(it.Queue, it.Payload, it.TransactionID)
	}
	return n
}
