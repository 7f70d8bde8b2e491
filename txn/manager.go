package txn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/queen"
)

// The two caps derived from a commit's shape (seed 000, "Ceilings that are
// not configurable"), and the sweep's period.
const (
	// MaxPartitions is the partitions one transaction may write.
	MaxPartitions = 200
	// MaxOffsets is the offsets one transaction may commit: the
	// transaction rider's operation ceiling less the fence and the group
	// index (§10). A second group's index costs one of them.
	MaxOffsets = riderOps - 2
	riderOps   = 64
	// SweepInterval is how often transactions past their timeout expire.
	SweepInterval = time.Second
	// maxBindings bounds the transactional ids the process holds, open
	// or not (MaxOpen bounds the open ones): about 20 MB of them, a number
	// reached only by a fleet of producers or by misconfiguration; an id
	// whose connection closed gives way first when it is reached.
	maxBindings = 1 << 16
)

// Limits are the QUEEN_KAFKA_TXN_* caps (seed 000) and the body ceiling
// one commit must fit in.
type Limits struct {
	MaxBytes       int64         // staged record bytes in one transaction
	MaxRecords     int           // staged records in one transaction
	MaxStagedBytes int64         // staged record bytes across the process
	MaxOpen        int           // open transactions at once
	MaxTimeout     time.Duration // ceiling on transaction.timeout.ms
	// MaxCommitBody is Queen's request body ceiling (QUEEN_MAX_BODY_BYTES,
	// §0): the commit is one POST /api/v1/transaction, so a transaction
	// whose commit body would pass it can never commit atomically.
	MaxCommitBody int64
}

// The defaults are derived from what one Queen transaction can carry
// (issue 23), not guessed: a body of at most DefaultCommitBody (Queen's
// default ceiling), in which each record's key, value and headers travel
// base64-encoded (4/3 of their bytes) inside a push item.
const (
	// DefaultCommitBody is Queen's default QUEEN_MAX_BODY_BYTES.
	DefaultCommitBody = 64 << 20
	// DefaultMaxBytes is the most record bytes a commit body can carry:
	// 3/4 of it, what base64 leaves.
	DefaultMaxBytes = DefaultCommitBody / 4 * 3
	// DefaultMaxRecords is the most records a commit body can carry: no
	// push item of a commit is smaller than 96 bytes (its frame, a queue,
	// a partition, an empty envelope and a dedup key).
	DefaultMaxRecords = DefaultCommitBody / 96
	// DefaultMaxStagedBytes holds three transactions at the body ceiling
	// at once: the process budget, within the manifests' 512 MiB limit
	// (a stage in memory is its envelopes, 4/3 of its bytes, and the
	// commit renders one body beside it).
	DefaultMaxStagedBytes = 3 * DefaultMaxBytes
)

// DefaultLimits are the defaults of QUEEN_KAFKA_TXN_* (config's
// declaration names the same numbers).
var DefaultLimits = Limits{MaxBytes: DefaultMaxBytes, MaxRecords: DefaultMaxRecords, MaxStagedBytes: DefaultMaxStagedBytes, MaxOpen: 1024, MaxTimeout: 900 * time.Second, MaxCommitBody: DefaultCommitBody}

// Config is how a Manager is built.
type Config struct {
	Queen  Queen       // the node's own credential; a Client may override it
	IDs    IDs         // fresh producer ids
	Groups Groups      // membership of TxnOffsetCommit
	Stages Stages      // nil is Memory
	Clock  clock.Clock // nil is the wall clock; the sweep waits on its After
	// hold replaces the wait of a held Produce answer (stageHold) in
	// tests, which see the hold asked instead of waiting it.
	hold   func(time.Duration)
	Log    *slog.Logger
	Limits Limits // a zero field takes DefaultLimits'
	// Fault maps a failed call to Queen (the claim's put, the commit) to
	// the code answered — package faults' table; nil answers
	// COORDINATOR_NOT_AVAILABLE, retriable, for every failure. A rollback
	// on the fence is not a failure: it is PRODUCER_FENCED, decided here.
	Fault func(err error) int16
	// NodeID and Incarnation are written into every qk:txn: row; the
	// incarnation (minted when empty) is how this process recognises a
	// commit of its own that landed without its answer.
	NodeID      int32
	Incarnation string
	// TransactionV2 is the `transaction.version` 2 the node advertises
	// (KIP-890): a transactional Produce v12+ adds its partition to the
	// transaction implicitly. EndTxn v5's epoch bump is decided by the
	// request's version, as in Kafka; the node's window keeps v5 away when
	// this is off.
	TransactionV2 bool
	// Cluster is cluster mode (issue 9): the transactional id's owner
	// holds the binding, but its records and offsets are staged in Queen by
	// whichever node received them (Shared), so the owner announces each
	// transaction it opens in the qk:txn: row (state "ongoing", with its
	// start and timeout), loads from that row an id it does not hold (a
	// restart, an ownership move), and commits the stage Queen holds
	// (Stages must then be QueenStages).
	Cluster bool
}

// Key names one transactional id as the identity that reached it.
type Key struct {
	Identity string
	ID       string
}

// Manager is every transactional id this process holds. The map, and each
// binding's owner fields, are guarded by mu; everything else of a binding
// by that binding's own lock, held across its calls to Queen. Lock order:
// a binding's lock before mu. mu holders only TryLock a binding.
type Manager struct {
	cfg    Config
	lim    Limits
	log    *slog.Logger
	clock  clock.Clock
	stages Stages

	mu          sync.Mutex
	txns        map[Key]*binding
	maxBindings int
	// staged is the record bytes every stage holds (MaxStagedBytes);
	// open the transactions open (MaxOpen).
	staged atomic.Int64
	open   atomic.Int64
	// committed and aborted count the transactions decided (Stats).
	committed, aborted atomic.Uint64
	// conns is the newest connection (Client.Owner) any request came on:
	// the watermark a transaction records when it opens (lateEnd).
	conns atomic.Uint64
	// pending is single mode's index of the offsets open transactions
	// staged (coordinator.Unstable).
	pending pendingIndex

	startOnce, closeOnce sync.Once
	stop, done           chan struct{}
}

// New builds a manager. The sweep runs once Start is called.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Stages == nil {
		cfg.Stages = Memory{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Incarnation == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.Incarnation = hex.EncodeToString(b[:])
	}
	return &Manager{cfg: cfg, lim: cfg.Limits.withDefaults(), log: cfg.Log, clock: cfg.Clock, stages: cfg.Stages,
		txns: make(map[Key]*binding), maxBindings: maxBindings, stop: make(chan struct{}), done: make(chan struct{})}
}

// withDefaults is lim with every zero field DefaultLimits'.
func (lim Limits) withDefaults() Limits {
	d := DefaultLimits
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = d.MaxBytes
	}
	if lim.MaxRecords <= 0 {
		lim.MaxRecords = d.MaxRecords
	}
	if lim.MaxStagedBytes <= 0 {
		lim.MaxStagedBytes = d.MaxStagedBytes
	}
	if lim.MaxOpen <= 0 {
		lim.MaxOpen = d.MaxOpen
	}
	if lim.MaxTimeout <= 0 {
		lim.MaxTimeout = d.MaxTimeout
	}
	if lim.MaxCommitBody <= 0 {
		lim.MaxCommitBody = d.MaxCommitBody
	}
	return lim
}

// Start runs the sweep every SweepInterval until Close.
func (m *Manager) Start() {
	m.startOnce.Do(func() {
		go func() {
			defer close(m.done)
			for {
				select {
				case <-m.stop:
					return
				case <-m.clock.After(SweepInterval):
					m.Sweep()
				}
			}
		}()
	})
}

// Close stops the sweep. Stages are memory and need no release.
func (m *Manager) Close() {
	m.closeOnce.Do(func() { close(m.stop) })
	started := true
	m.startOnce.Do(func() { started = false; close(m.done) })
	if started {
		<-m.done
	}
}

// Staged is the record bytes every stage of the process holds.
func (m *Manager) Staged() int64 { return m.staged.Load() }

// Open is how many transactions are open in the process.
func (m *Manager) Open() int { return int(m.open.Load()) }

// Stats is the transactions of the process, for /metrics: open now, and
// decided so far by EndTxn (an abort of a transaction a timeout or a cap
// already made abortable included).
type Stats struct {
	Open               int
	Committed, Aborted uint64
}

// Stats reads the counts.
func (m *Manager) Stats() Stats {
	return Stats{Open: m.Open(), Committed: m.committed.Load(), Aborted: m.aborted.Load()}
}

// Held is how many transactional ids the process holds.
func (m *Manager) Held() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.txns)
}

// fault is the code a failed call to Queen answers.
func (m *Manager) fault(err error) int16 { return faultCode(m.cfg.Fault, err) }

// faultCode is f's code for err, COORDINATOR_NOT_AVAILABLE without f.
func faultCode(f func(error) int16, err error) int16 {
	if f == nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	return f(err)
}

func (m *Manager) kv(cl Client) Queen {
	if cl.Queen != nil {
		return cl.Queen
	}
	return m.cfg.Queen
}

func (m *Manager) groupClient(cl Client) coordinator.Client {
	return coordinator.Client{Identity: cl.Identity}
}

// lock returns k's binding, locked. A missing one is created (unbound)
// when create; at maxBindings that first evicts a binding given up on, and
// failing that answers CONCURRENT_TRANSACTIONS, retriable: a transaction
// ending makes room. Without create a missing binding is nil.
func (m *Manager) lock(k Key, create bool) (*binding, int16) {
	for {
		m.mu.Lock()
		t := m.txns[k]
		if t == nil {
			if !create {
				m.mu.Unlock()
				return nil, 0
			}
			if len(m.txns) >= m.maxBindings && !m.evictLocked() {
				m.mu.Unlock()
				m.log.Warn("as many transactional ids held as the process allows: InitProducerId answered CONCURRENT_TRANSACTIONS", "held", m.maxBindings)
				return nil, kerr.ConcurrentTransactions.Code
			}
			t = newBinding(k)
			m.txns[k] = t
		}
		m.mu.Unlock()
		t.mu.Lock()
		if !t.removed {
			return t, 0
		}
		t.mu.Unlock()
	}
}

// adopt makes owner t's connection (t is locked): a request of the
// producer that holds the binding keeps it from lingering out, including
// from a connection other than the one that claimed it.
func (m *Manager) adopt(t *binding, owner uint64) {
	if owner == 0 {
		return
	}
	m.mu.Lock()
	t.owner, t.orphaned = owner, time.Time{}
	m.mu.Unlock()
}

// held locks the binding of the request's transactional id and checks the
// request's producer id and epoch against it (fenced is the code an older
// epoch gets at the request's version), the deadline applied first. With
// no binding, or a refused request, the binding is nil and the code is
// what the request is answered: a transactional id this process does not
// hold — a restart, a binding given up on — is INVALID_TXN_STATE.
func (m *Manager) held(ctx context.Context, cl Client, id string, pid int64, epoch int16, fenced int16) (*binding, int16) {
	m.saw(cl)
	t, _ := m.lock(Key{Identity: cl.Identity, ID: id}, false)
	if t == nil && m.cfg.Cluster {
		return m.load(ctx, cl, Key{Identity: cl.Identity, ID: id}, pid, epoch, fenced)
	}
	if t == nil {
		return nil, kerr.InvalidTxnState.Code
	}
	return m.checked(cl, t, pid, epoch, fenced)
}

// saw notes the connection a request came on (lateEnd's watermark).
func (m *Manager) saw(cl Client) {
	for {
		cur := m.conns.Load()
		if cl.Owner <= cur || m.conns.CompareAndSwap(cur, cl.Owner) {
			return
		}
	}
}

// took records that cl's connection took part in t's open transaction.
func (t *binding) took(cl Client) {
	if cl.Owner == 0 {
		return
	}
	if t.parts == nil {
		t.parts = make(map[uint64]bool, 2)
	}
	t.parts[cl.Owner] = true
}

// lateEnd reports an EndTxn v0–v4 that cannot be for t's open
// transaction: it came on a connection the process already knew when the
// transaction opened (watermark) and that took no part in it. Kafka's
// clients send a transaction's coordinator requests on one connection, and
// a connection opened later (a reconnect) may end it; so such an EndTxn
// was sent before the transaction opened — a late EndTxn of the previous
// one, delayed past its retry (issue 23) — and must not decide this one.
func (t *binding) lateEnd(cl Client) bool {
	open := t.holds() || t.state == stateAbortable
	return open && cl.Owner != 0 && cl.Owner <= t.watermark && !t.parts[cl.Owner]
}

// checked is held's verdict on t, locked: kept locked, adopted by cl and
// past its deadline applied when the request may use it, else unlocked.
func (m *Manager) checked(cl Client, t *binding, pid int64, epoch int16, fenced int16) (*binding, int16) {
	if code := t.check(pid, epoch, fenced); code != 0 {
		t.mu.Unlock()
		return nil, code
	}
	m.adopt(t, cl.Owner)
	t.expire(m, m.clock.Now())
	return t, 0
}

// evictLocked makes room for a binding: it removes the one whose
// connection closed longest ago among those holding no transaction, and
// reports whether there was one.
func (m *Manager) evictLocked() bool {
	var pick *binding
	for _, t := range m.txns {
		if t.orphaned.IsZero() || pick != nil && !t.orphaned.Before(pick.orphaned) || !t.mu.TryLock() {
			continue
		}
		idle := t.bound && !t.holds()
		t.mu.Unlock()
		if idle {
			pick = t
		}
	}
	if pick == nil || !pick.mu.TryLock() {
		return false
	}
	m.removeLocked(pick)
	pick.mu.Unlock()
	return true
}

// removeLocked takes t, locked, out of the map; m.mu is held.
func (m *Manager) removeLocked(t *binding) {
	m.release(t)
	t.removed = true
	delete(m.txns, t.key)
}

// forget removes t, locked by the caller.
func (m *Manager) forget(t *binding) {
	m.mu.Lock()
	m.removeLocked(t)
	m.mu.Unlock()
}

// Disconnected records that owner's connection closed. What it held is
// not dropped: an open transaction stays committable, by whoever resumes it
// with its producer id and epoch, until its own timeout (Sweep), and the
// binding stays until the bound on held ids needs the room, when the ones
// whose connection closed longest ago give way first. A client closes an
// idle connection and reopens one on its next request (franz-go after 20 s
// of quiet), so a binding cannot go with its connection: the producer's
// next transaction would meet an id this process forgot.
func (m *Manager) Disconnected(owner uint64) {
	if owner == 0 {
		return
	}
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.txns {
		if t.owner == owner && t.orphaned.IsZero() {
			t.orphaned = now
		}
	}
}

// Sweep expires every transaction past its timeout: its stage is dropped
// and never written, and the producer must abort. A binding busy with a
// call to Queen is looked at next time. It returns how many transactions
// expired.
func (m *Manager) Sweep() int {
	now := m.clock.Now()
	expired := 0
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.txns {
		if !t.mu.TryLock() {
			continue
		}
		if t.expire(m, now) {
			expired++
		}
		t.mu.Unlock()
	}
	if expired > 0 {
		m.log.Warn("transactions past their transaction.timeout.ms expired: their staged records were dropped and never written", "expired", expired)
	}
	return expired
}

// release drops t's stage and gives its bytes back, and its place among
// the open transactions; t is locked, and its state is the caller's to set.
func (m *Manager) release(t *binding) {
	if t.holds() {
		m.open.Add(-1)
	}
	if t.stage != nil {
		t.stage.Drop()
		t.stage = nil
	}
	m.staged.Add(-t.bytes)
	m.pending.drop(t.key.Identity, t.offsetKeys)
	t.clear()
}

// begin opens a transaction on t, an empty one: its stage, and its
// deadline. Past QUEEN_KAFKA_TXN_MAX_OPEN it is MESSAGE_TOO_LARGE and
// nothing opens; the producer aborts and tries again once another
// transaction has ended. In cluster mode the qk:txn: row says "ongoing"
// first (announce), so that the nodes staging its records accept them.
func (m *Manager) begin(ctx context.Context, cl Client, t *binding, now time.Time, fenced int16) int16 {
	if m.open.Add(1) > int64(m.lim.MaxOpen) {
		m.open.Add(-1)
		m.log.Warn("as many transactions open as QUEEN_KAFKA_TXN_MAX_OPEN allows: one more refused MESSAGE_TOO_LARGE", "transactional_id", t.key.ID, "max_open", m.lim.MaxOpen)
		return kerr.MessageTooLarge.Code
	}
	t.begun = now
	if m.cfg.Cluster {
		// announce may find the transaction opened by a leader already,
		// and its start with it.
		if code := m.announce(ctx, cl, t, now, fenced); code != 0 {
			m.open.Add(-1)
			return code
		}
	}
	t.state = stateOngoing
	t.deadline = t.begun.Add(t.timeout)
	t.stage = m.stages.Open(t.key, m.ref(t), m.kv(cl))
	t.watermark = m.conns.Load()
	t.took(cl)
	return 0
}

// ref is the transaction t opens or holds: its stage's name in Queen.
func (m *Manager) ref(t *binding) Ref { return Ref{PID: t.pid, Epoch: t.epoch, Txn: t.seq + 1} }

// rowID is the producer id and epoch t's next row write names: the bump
// of a KIP-890 decision under way, else the held ones.
func (t *binding) rowID() (int64, int16) {
	if t.next != nil {
		return t.next.pid, t.next.epoch
	}
	return t.pid, t.epoch
}

func (m *Manager) now() int64 { return m.clock.Now().UnixMilli() }

// markerOp is the put of t's row with state, expecting the version held.
func (m *Manager) markerOp(t *binding, state string, seq uint64, required bool) queen.KVOp {
	expect := t.version
	pid, epoch := t.rowID()
	mk := marker{PID: pid, Epoch: epoch, State: state, Seq: seq, Node: m.cfg.NodeID, Incarnation: m.cfg.Incarnation, TS: m.now()}
	if t.next != nil {
		mk.Bumped, mk.FromPID, mk.FromEpoch = true, t.pid, t.epoch
	}
	if m.cfg.Cluster {
		mk.TimeoutMs = t.timeout.Milliseconds()
		if state == rowOngoing {
			mk.Begin = t.begun.UnixMilli()
		}
	}
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TxnKey(t.key.ID), Forever: true, Expect: &expect, Required: required, Value: mk.json()}
}
