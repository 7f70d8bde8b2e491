package txn

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"github.com/queen-mq/queen-kafka/internal/codegrid"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/coordinator"
	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/queen"
)

// Shared is cluster mode's staging half, served by every node (issue 9): a
// transactional Produce goes to each partition's leader and a
// TxnOffsetCommit to the group's coordinator, neither of which need be the
// transactional id's owner, and nodes share nothing but Queen. So the
// records and offsets are staged in Queen, under qk:txnstage: (queen/keys.go
// gives the layout), where the owner's EndTxn(commit) reads them.
//
// A write is accepted against the qk:txn: row: the producer id and epoch
// must be the row's and its state "ongoing" (the owner's AddPartitionsToTxn
// or AddOffsetsToTxn wrote it), and the rows go under the transaction's
// number. The row is cached per id, and read again in the very call that
// writes the rows (a getMany after the puts, one database transaction), so
// a stale cache can never stage into a decided transaction: the write then
// answers from the fresh row, or is tried once more under the new number.
// The owner's epoch bump fences: the row names the new epoch from then on.
//
// The caps of seed 000 hold per node here (QUEEN_KAFKA_TXN_MAX_RECORDS and
// _MAX_BYTES over what this node staged of one transaction, _MAX_STAGED_BYTES
// over what it staged of every transaction not past its timeout), and per
// transaction at the owner's commit, over what every node staged. A batch
// over a cap is MESSAGE_TOO_LARGE and leaves an x: row in the stage, so
// that the transaction can only abort.
type Shared struct {
	q      Queen
	groups Groups
	lim    Limits
	clock  clock.Clock
	log    *slog.Logger
	fault  func(error) int16
	node   int32
	v2     bool
	hold   func(time.Duration) // SharedConfig.hold

	mu       sync.Mutex
	rows     map[Key]cachedRow
	portions map[Key]map[Ref]*portion // by id, so a row read touches only its own
	staged   int64                    // record bytes of every portion
}

// SharedConfig is how a Shared is built; the fields mean what Config's do.
type SharedConfig struct {
	Queen  Queen
	Groups Groups
	Limits Limits
	Clock  clock.Clock
	Log    *slog.Logger
	Fault  func(err error) int16
	NodeID int32
	// TransactionV2: a Produce v12+ or TxnOffsetCommit v5+ opens its
	// producer's next transaction itself (KIP-890's implicit add).
	TransactionV2 bool
	// hold replaces the wait of a held Produce answer (Config.hold).
	hold func(time.Duration)
}

// cachedRow is a qk:txn: row as this node last read it, with its version:
// what an implicit open's compare-and-set expects.
type cachedRow struct {
	mk      marker
	version int64
}

// portionKey is one transaction as one node staged it.
type portionKey struct {
	key Key
	ref Ref
}

// portion is what this node staged of one transaction, until its deadline
// (and the ttl margin) passes.
type portion struct {
	records int
	bytes   int64
	body    int64 // what its records add to the commit body (batchBody)
	until   time.Time
}

// NewShared builds the staging half.
func NewShared(cfg SharedConfig) *Shared {
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Shared{q: cfg.Queen, groups: cfg.Groups, lim: cfg.Limits.withDefaults(), clock: cfg.Clock, log: cfg.Log,
		fault: func(err error) int16 { return faultCode(cfg.Fault, err) }, node: cfg.NodeID, v2: cfg.TransactionV2, hold: cfg.hold,
		rows: make(map[Key]cachedRow), portions: make(map[Key]map[Ref]*portion)}
}

func (s *Shared) kv(cl Client) Queen {
	if cl.Queen != nil {
		return cl.Queen
	}
	return s.q
}

// rowOp reads the qk:txn: row of id.
func rowOp(id string) queen.KVOp {
	return queen.KVOp{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{queen.TxnKey(id)}}
}

// remember caches what a read of k's row found (r, a getMany result); a
// missing row is no row.
func (s *Shared) remember(k Key, r queen.KVResult) (marker, bool) {
	mk, ok, version := marker{}, false, int64(0)
	if len(r.Rows) > 0 {
		mk, ok = readMarker(r.Rows[0].Value)
		version = r.Rows[0].Version
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// What this node staged of k's transactions other than the open one
	// (decided, of a fenced epoch, or of a row gone) no longer counts
	// against its caps.
	for ref, p := range s.portions[k] {
		// (A portion of the transaction after a decided row's is one a
		// Produce v12+ is opening with its staging write: it stays.)
		if !ok || ref.PID != mk.PID || ref.Epoch != mk.Epoch || ref.Txn != mk.Seq+1 {
			s.dropPortion(k, ref, p)
		}
	}
	if !ok {
		delete(s.rows, k)
		return marker{}, false
	}
	if len(s.rows) >= maxBindings {
		clear(s.rows) // a cache: everything is read again
	}
	s.rows[k] = cachedRow{mk, version}
	return mk, true
}

// cached is k's row as last read, with its version.
func (s *Shared) cached(k Key) (cachedRow, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.rows[k]
	return c, ok
}

// capStagedBytes is the node-wide cap reserve can refuse a batch for.
const capStagedBytes = "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES"

// collectKeysPerCall is §7.3's 1,024 keys of one KV call.
const collectKeysPerCall = 1024

// collect reads afresh the rows of the transactional ids of cl's identity
// that this node holds staged portions of, so that the portions of
// transactions their owners decided since (which this node hears of only
// by reading the row) stop counting against QUEEN_KAFKA_TXN_MAX_STAGED_BYTES.
// It runs only when a batch would pass that cap. Other identities' rows
// need their own credentials: their portions are collected by their own
// next refusal, or expire.
func (s *Shared) collect(ctx context.Context, cl Client) {
	s.mu.Lock()
	var ids, keys []string
	for k := range s.portions {
		if k.Identity == cl.Identity {
			ids, keys = append(ids, k.ID), append(keys, queen.TxnKey(k.ID))
		}
	}
	s.mu.Unlock()
	rows, err := queen.ReadKeys(ctx, s.kv(cl), keys, collectKeysPerCall)
	if err != nil {
		s.log.Warn("re-reading transactional ids' rows to free staged bytes failed", "ids", len(ids), "err", err)
		return
	}
	for i, id := range ids {
		var r queen.KVResult // a key not read back is no row
		if row, ok := rows[keys[i]]; ok {
			r.Rows = []queen.KVRow{row}
		}
		s.remember(Key{Identity: cl.Identity, ID: id}, r)
	}
}

// dropPortion forgets one portion and its bytes; s.mu is held.
func (s *Shared) dropPortion(k Key, ref Ref, p *portion) {
	s.staged -= p.bytes
	delete(s.portions[k], ref)
	if len(s.portions[k]) == 0 {
		delete(s.portions, k)
	}
}

// row is k's row, from the cache unless fresh.
func (s *Shared) row(ctx context.Context, cl Client, k Key, fresh bool) (marker, bool, int16) {
	if !fresh {
		if c, ok := s.cached(k); ok {
			return c.mk, true, 0
		}
	}
	res, err := s.kv(cl).KV(ctx, []queen.KVOp{rowOp(k.ID)})
	if err != nil {
		s.log.Warn("reading a transactional id's row failed", "transactional_id", k.ID, "err", err)
		return marker{}, false, s.fault(err)
	}
	if res[0].Truncated {
		return marker{}, false, kerr.CoordinatorNotAvailable.Code
	}
	mk, ok := s.remember(k, res[0])
	return mk, ok, 0
}

// verdict is a write of producer pid at epoch against row mk: 0 when the
// transaction is open, else what a broker answers.
func verdict(mk marker, ok bool, pid int64, epoch int16, fenced int16) (int16, string) {
	switch {
	case !ok:
		return kerr.InvalidTxnState.Code, "the transactional id holds no producer"
	case mk.PID != pid:
		return kerr.InvalidProducerIDMapping.Code, "another producer id holds the transactional id"
	case epoch < mk.Epoch:
		return fenced, "a newer epoch holds the transactional id"
	case epoch > mk.Epoch:
		return kerr.InvalidProducerEpoch.Code, "an epoch the coordinator never granted"
	case mk.State != rowOngoing:
		return kerr.InvalidTxnState.Code, "no transaction is open (AddPartitionsToTxn first)"
	}
	return 0, ""
}

// current is the open transaction of k for producer pid at epoch: the
// cached row, or a fresh one when the cache refuses.
func (s *Shared) current(ctx context.Context, cl Client, k Key, pid int64, epoch int16, fenced int16) (marker, int16, string) {
	mk, ok, code := s.row(ctx, cl, k, false)
	if code != 0 {
		return marker{}, code, "the transactional id's row could not be read"
	}
	if c, _ := verdict(mk, ok, pid, epoch, fenced); c == 0 {
		return mk, 0, ""
	}
	if mk, ok, code = s.row(ctx, cl, k, true); code != 0 {
		return marker{}, code, "the transactional id's row could not be read"
	}
	c, msg := verdict(mk, ok, pid, epoch, fenced)
	return mk, c, msg
}

// Admit is Manager.Admit in cluster mode: the producer must hold the
// transactional id at this epoch and a transaction must be open, or (a
// Produce v12+ under KIP-890) be one the batch's staging write can open.
// The partition's inclusion is not checked (the owner keeps that list).
func (s *Shared) Admit(ctx context.Context, cl Client, b *Batch) (int16, string) {
	k := Key{Identity: cl.Identity, ID: b.TransactionalID}
	_, _, code, msg := s.admitted(ctx, cl, k, b.ProducerID, b.ProducerEpoch, b.Implicit)
	return code, msg
}

// opening is how the next transaction of k's producer pid at epoch opens,
// for a Produce v12+ or TxnOffsetCommit v5+ (KIP-890's implicit add, which
// a Kafka partition leader asks of the coordinator): the qk:txn: row put
// "ongoing" by compare-and-set on the version last read (current has just
// read it afresh), as the owner's own announce writes it; the owner adopts
// it at the producer's next request. It returns the transaction's marker
// and that put, which the caller sends in the same call as what it stages
// (nil when the transaction is open already), or the refusal of a row that
// is not this producer's at this epoch.
func (s *Shared) opening(ctx context.Context, cl Client, k Key, pid int64, epoch int16, fenced int16) (marker, *queen.KVOp, int16, string) {
	c, ok := s.cached(k)
	if !ok {
		// The cache was cleared since the row was read: read it again.
		if _, _, code := s.row(ctx, cl, k, true); code != 0 {
			return marker{}, nil, code, "the transactional id's row could not be read"
		}
		c, ok = s.cached(k)
	}
	code, msg := verdict(c.mk, ok, pid, epoch, fenced)
	switch {
	case code == 0:
		return c.mk, nil, 0, "" // open already
	case code != kerr.InvalidTxnState.Code || !ok:
		return c.mk, nil, code, msg
	}
	now := s.clock.Now().UnixMilli()
	next := marker{PID: c.mk.PID, Epoch: c.mk.Epoch, State: rowOngoing, Seq: c.mk.Seq, Node: s.node, TS: now, TimeoutMs: c.mk.TimeoutMs, Begin: now}
	if next.TimeoutMs <= 0 {
		next.TimeoutMs = s.lim.MaxTimeout.Milliseconds()
	}
	expect := c.version
	op := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TxnKey(k.ID), Forever: true, Expect: &expect, Value: next.json()}
	return next, &op, 0, ""
}

// open opens the next transaction of k's producer pid at epoch in a call
// of its own (opening's put); a row another writer moved meanwhile is
// taken from the put's answer, which carries it (§7.2), and tried once
// more.
func (s *Shared) open(ctx context.Context, cl Client, k Key, pid int64, epoch int16, fenced int16) (marker, int16, string) {
	for attempt := 0; attempt < 2; attempt++ {
		next, op, code, msg := s.opening(ctx, cl, k, pid, epoch, fenced)
		if code != 0 || op == nil {
			return next, code, msg
		}
		put, err := s.kv(cl).KV(ctx, []queen.KVOp{*op})
		if err != nil {
			s.log.Warn("opening a transaction implicitly failed", "transactional_id", k.ID, "err", err)
			return marker{}, s.fault(err), "the transaction could not be opened; retry"
		}
		if put[0].Applied {
			s.remember(k, queen.KVResult{Rows: []queen.KVRow{{Key: op.Key, Value: op.Value, Version: put[0].Version}}})
			return next, 0, ""
		}
		s.lost(ctx, cl, k, put[0])
	}
	return marker{}, kerr.ConcurrentTransactions.Code, "the transactional id's row moved while the transaction was opened; retry"
}

// lost caches what a compare-and-set of k's row that did not apply met:
// the row its answer carries (§7.2), or, when the answer does not say (an
// absent row, or a broker that could not report it), the row read afresh.
func (s *Shared) lost(ctx context.Context, cl Client, k Key, r queen.KVResult) {
	if r.Version > 0 && len(r.Value) > 0 && string(r.Value) != "null" {
		s.remember(k, queen.KVResult{Rows: []queen.KVRow{{Key: queen.TxnKey(k.ID), Value: r.Value, Version: r.Version}}})
		return
	}
	s.row(ctx, cl, k, true)
}

// admitted is the transaction a batch of pid at epoch stages into: the
// open one, or for a Produce v12+ (implicit) the one opening's put, sent
// with the batch's rows, opens.
func (s *Shared) admitted(ctx context.Context, cl Client, k Key, pid int64, epoch int16, implicit bool) (marker, *queen.KVOp, int16, string) {
	if c, ok := s.cached(k); ok && implicit && s.v2 {
		if code, _ := verdict(c.mk, true, pid, epoch, kerr.ProducerFenced.Code); code == kerr.InvalidTxnState.Code {
			// The row as last read names this producer at this epoch with
			// no transaction open: open from it with no read of its own,
			// as an open row is trusted from the cache (a stale row loses
			// the put's compare-and-set, and the read-back says so). So
			// the batches of every partition after a request's first, and
			// the staging write, read nothing.
			return s.opening(ctx, cl, k, pid, epoch, kerr.ProducerFenced.Code)
		}
	}
	mk, code, msg := s.current(ctx, cl, k, pid, epoch, kerr.ProducerFenced.Code)
	if code == kerr.InvalidTxnState.Code && implicit && s.v2 {
		return s.opening(ctx, cl, k, pid, epoch, kerr.ProducerFenced.Code)
	}
	return mk, nil, code, msg
}

// Produce stages one partition's batch in Queen, under the open
// transaction's number, in rows named by the batch's base sequence, so
// that a retry through any node rewrites the same rows. Past half of a
// cap, over what this node staged of the transaction, the answer is held
// as Manager.Produce's is (stageHold).
func (s *Shared) Produce(ctx context.Context, cl Client, b *Batch) (int16, string) {
	code, msg, hold := s.produce(ctx, cl, b)
	holdAnswer(ctx, hold, s.hold)
	return code, msg
}

// produce is Produce without the hold, which it returns.
func (s *Shared) produce(ctx context.Context, cl Client, b *Batch) (code int16, msg string, hold time.Duration) {
	k := Key{Identity: cl.Identity, ID: b.TransactionalID}
	sh := shareOf(b)
	for attempt := 0; ; attempt++ {
		mk, open, code, msg := s.admitted(ctx, cl, k, b.ProducerID, b.ProducerEpoch, b.Implicit)
		if code != 0 {
			return code, msg, 0
		}
		ref := Ref{PID: b.ProducerID, Epoch: b.ProducerEpoch, Txn: mk.Seq + 1}
		prefix := queen.TxnStagePrefix(b.TransactionalID, ref.PID, ref.Epoch, ref.Txn)
		ops, err := recordRows(prefix, b, StageTTL(time.Duration(mk.TimeoutMs)*time.Millisecond))
		if err != nil {
			return kerr.InvalidRequest.Code, err.Error(), 0
		}
		pk := portionKey{k, ref}
		why, hold := s.reserve(pk, mk, sh)
		if why != "" && attempt == 0 {
			// The cached row may name a transaction its owner has decided
			// since: read it afresh before refusing the batch.
			if fresh, ok, code := s.row(ctx, cl, k, true); code == 0 && ok && (fresh.Seq != mk.Seq || fresh.Epoch != mk.Epoch) {
				continue
			}
			// Past the node's staged bytes, other ids' rows may be stale
			// too: collect what their owners decided, then try once more.
			if why == capStagedBytes {
				s.collect(ctx, cl)
				why, hold = s.reserve(pk, mk, sh)
			}
		}
		if why != "" {
			s.poison(ctx, cl, pk, mk, why)
			return kerr.MessageTooLarge.Code, "the transaction is past " + why + "; abort it", 0
		}
		again, code, msg := s.write(ctx, cl, k, mk, open, ops, b.ProducerID, b.ProducerEpoch, kerr.ProducerFenced.Code)
		if code == 0 {
			return 0, "", hold
		}
		s.unreserve(pk, sh)
		if !again || attempt > 0 {
			return code, msg, 0
		}
	}
}

// Outcome is one batch's answer from ProduceAll.
type Outcome struct {
	Code int16
	Msg  string
}

// ProduceAll stages the batches of one transactional Produce request (one
// transactional id, producer and epoch; one batch per partition) with
// their rows in one KV call (or one per 64 rows) instead of one per batch:
// a request across partitions costs the staging node one round trip to
// Queen, not one per partition. A batch past a cap, or a request the
// cached row cannot take whole, is staged batch by batch through Produce,
// which answers each as before. The answer is held once, for the longest
// hold any batch asked (Produce).
func (s *Shared) ProduceAll(ctx context.Context, cl Client, bs []*Batch) []Outcome {
	var hold time.Duration
	defer func() { holdAnswer(ctx, hold, s.hold) }()
	return s.produceAll(ctx, cl, bs, &hold)
}

// produceAll is ProduceAll without the hold, which it raises to the
// longest asked.
func (s *Shared) produceAll(ctx context.Context, cl Client, bs []*Batch, hold *time.Duration) []Outcome {
	out := make([]Outcome, len(bs))
	one := func(i int) {
		var h time.Duration
		out[i].Code, out[i].Msg, h = s.produce(ctx, cl, bs[i])
		*hold = max(*hold, h)
	}
	if len(bs) == 0 {
		return out
	}
	first := bs[0]
	k := Key{Identity: cl.Identity, ID: first.TransactionalID}
	mk, open, code, msg := s.admitted(ctx, cl, k, first.ProducerID, first.ProducerEpoch, first.Implicit)
	if code != 0 {
		for i := range out {
			out[i] = Outcome{code, msg}
		}
		return out
	}
	ref := Ref{PID: first.ProducerID, Epoch: first.ProducerEpoch, Txn: mk.Seq + 1}
	prefix := queen.TxnStagePrefix(first.TransactionalID, ref.PID, ref.Epoch, ref.Txn)
	ttl := StageTTL(time.Duration(mk.TimeoutMs) * time.Millisecond)
	pk := portionKey{k, ref}
	var ops []queen.KVOp
	var held []int
	var written time.Duration // the hold of the batches written together
	for i, b := range bs {
		if b.TransactionalID != first.TransactionalID || b.ProducerID != first.ProducerID || b.ProducerEpoch != first.ProducerEpoch || b.Implicit != first.Implicit {
			one(i)
			continue
		}
		rows, err := recordRows(prefix, b, ttl)
		if err != nil {
			out[i] = Outcome{kerr.InvalidRequest.Code, err.Error()}
			continue
		}
		why, h := s.reserve(pk, mk, shareOf(b))
		if why != "" {
			one(i) // Produce reads afresh, collects, or refuses and marks
			continue
		}
		written = max(written, h)
		ops = append(ops, rows...)
		held = append(held, i)
	}
	if len(held) == 0 {
		return out
	}
	again, code, msg := s.write(ctx, cl, k, mk, open, ops, first.ProducerID, first.ProducerEpoch, kerr.ProducerFenced.Code)
	if code == 0 {
		*hold = max(*hold, written)
		return out
	}
	for _, i := range held {
		s.unreserve(pk, shareOf(bs[i]))
	}
	for _, i := range held {
		if again {
			one(i) // the row moved on to another open transaction
		} else {
			out[i] = Outcome{code, msg}
		}
	}
	return out
}

// write puts ops (stage rows of mk's transaction) in calls within §7.3's
// limits, each reading the row back after its writes; open, when not nil,
// is the put that opens that transaction (opening), sent first in the
// first call: the read-back says whether it is open, by this put or
// another node's. again is a refusal by a row that moved on to another
// open transaction, or that this put could not open, which the caller may
// stage into (or open) afresh instead.
func (s *Shared) write(ctx context.Context, cl Client, k Key, mk marker, open *queen.KVOp, ops []queen.KVOp, pid int64, epoch int16, fenced int16) (again bool, code int16, msg string) {
	const perCall = 64 // 64 values of ≤64 KiB: a 4 MiB body
	for len(ops) > 0 {
		n := min(len(ops), perCall)
		call := make([]queen.KVOp, 0, n+2)
		if open != nil {
			call = append(call, *open)
		}
		call = append(append(call, ops[:n]...), rowOp(k.ID))
		res, err := s.kv(cl).KV(ctx, call)
		if err != nil {
			s.log.Warn("staging transactional rows failed", "transactional_id", k.ID, "err", err)
			return false, s.fault(err), "the records could not be staged; retry"
		}
		now, ok := s.remember(k, res[len(call)-1])
		if c, m := verdict(now, ok, pid, epoch, fenced); c != 0 {
			return open != nil && c == kerr.InvalidTxnState.Code, c, m
		}
		if now.Seq != mk.Seq {
			return true, kerr.InvalidTxnState.Code, "the transaction moved on while its records were staged"
		}
		open = nil
		ops = ops[n:]
	}
	return false, 0, ""
}

// share is what one batch counts against a portion.
type share struct {
	records     int
	bytes, body int64
}

func shareOf(b *Batch) share {
	return share{records: len(b.Payloads), bytes: b.Bytes, body: batchBody(b)}
}

// reserve counts a batch against this node's caps and returns "" and the
// hold its answer asks (stageHold over the portion with it), or the cap it
// is over (counting nothing).
func (s *Shared) reserve(pk portionKey, mk marker, sh share) (string, time.Duration) {
	records, bytes := sh.records, sh.bytes
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, refs := range s.portions {
		for ref, p := range refs {
			if now.After(p.until) {
				s.dropPortion(k, ref, p)
			}
		}
	}
	p := s.portions[pk.key][pk.ref]
	if p == nil {
		timeout := time.Duration(mk.TimeoutMs) * time.Millisecond
		p = &portion{until: time.UnixMilli(mk.Begin).Add(timeout + stageMargin)}
		if s.portions[pk.key] == nil {
			s.portions[pk.key] = make(map[Ref]*portion)
		}
		s.portions[pk.key][pk.ref] = p
	}
	switch {
	case p.records+records > s.lim.MaxRecords:
		return "QUEEN_KAFKA_TXN_MAX_RECORDS", 0
	case p.bytes+bytes > s.lim.MaxBytes:
		return "QUEEN_KAFKA_TXN_MAX_BYTES", 0
	case s.staged+bytes > s.lim.MaxStagedBytes:
		return capStagedBytes, 0
	}
	p.records += records
	p.bytes += bytes
	p.body += sh.body
	s.staged += bytes
	return "", s.lim.capsHold(p.body, p.bytes, p.records)
}

func (s *Shared) unreserve(pk portionKey, sh share) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.portions[pk.key][pk.ref]; p != nil {
		p.records -= sh.records
		p.bytes -= sh.bytes
		p.body -= sh.body
		s.staged -= sh.bytes
	}
}

// Staged is the record bytes this node staged for transactions not yet
// past their timeout.
func (s *Shared) Staged() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.staged
}

// poison writes the x: row that keeps the transaction from committing,
// best effort: the producer was refused the batch, and a client aborts a
// transaction one of whose batches failed.
func (s *Shared) poison(ctx context.Context, cl Client, pk portionKey, mk marker, why string) {
	s.log.Warn("a transaction is past a cap at this node; the producer must abort it", "transactional_id", pk.key.ID, "producer_id", pk.ref.PID, "epoch", pk.ref.Epoch, "cap", why)
	key := queen.TxnStagePrefix(pk.key.ID, pk.ref.PID, pk.ref.Epoch, pk.ref.Txn) + "x:" + strconv.Itoa(int(s.node))
	val, _ := json.Marshal(map[string]string{"why": why})
	op := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: val, TTLSeconds: StageTTL(time.Duration(mk.TimeoutMs) * time.Millisecond)}
	if _, err := s.kv(cl).KV(ctx, []queen.KVOp{op}); err != nil {
		s.log.Warn("the cap's mark could not be staged", "transactional_id", pk.key.ID, "err", err)
	}
}

// TxnOffsetCommit is Manager.TxnOffsetCommit in cluster mode, served by the
// group's coordinator (where Kafka clients send it): the group's rule is
// checked here, and each offset is staged as an o: row of the open
// transaction, the same call counting the offsets staged so far against
// the rider's budget (MaxOffsets, less one per further group).
func (s *Shared) TxnOffsetCommit(ctx context.Context, cl Client, req *kmsg.TxnOffsetCommitRequest, served PartitionCheck) *kmsg.TxnOffsetCommitResponse {
	return answerOffsets(ctx, req, served, func(codes codegrid.Grid) int16 {
		return s.stageOffsets(ctx, cl, req, codes)
	})
}

func (s *Shared) stageOffsets(ctx context.Context, cl Client, req *kmsg.TxnOffsetCommitRequest, codes codegrid.Grid) int16 {
	k := Key{Identity: cl.Identity, ID: req.TransactionalID}
	fenced := fencedCode(req.Version >= 3)
	mk, code, _ := s.current(ctx, cl, k, req.ProducerID, req.ProducerEpoch, fenced)
	if code == kerr.InvalidTxnState.Code && req.Version >= 5 && s.v2 {
		mk, code, _ = s.open(ctx, cl, k, req.ProducerID, req.ProducerEpoch, fenced)
	}
	if code != 0 {
		return code
	}
	code, ptype := s.groups.TxnCommitCheck(coordinator.Client{Identity: cl.Identity}, req.Group, req.MemberID, req.InstanceID, req.Generation, req.Version)
	if code != 0 {
		return code
	}
	for attempt := 0; ; attempt++ {
		ref := Ref{PID: req.ProducerID, Epoch: req.ProducerEpoch, Txn: mk.Seq + 1}
		prefix := queen.TxnStagePrefix(req.TransactionalID, ref.PID, ref.Epoch, ref.Txn)
		ttl := StageTTL(time.Duration(mk.TimeoutMs) * time.Millisecond)
		var ops, pends []queen.KVOp
		seen := map[string]bool{}
		for i, rt := range req.Topics {
			for j, p := range rt.Partitions {
				if codes[i][j] != 0 {
					continue
				}
				_, md, code := offsetEntry(req.Group, rt.Topic, p)
				key := prefix + "o:" + queen.Esc(req.Group) + ":" + queen.Esc(rt.Topic) + ":" + strconv.FormatInt(int64(p.Partition), 10)
				switch {
				case code != 0:
					codes[i][j] = code
					continue
				case len(key) > queen.MaxKeyBytes:
					codes[i][j] = kerr.InvalidCommitOffsetSize.Code
					continue
				case seen[key]:
					continue // a partition named twice: one write per key per call
				}
				pend, fits := pendingOp(req.Group, rt.Topic, p.Partition, pendingRow{ID: req.TransactionalID, PID: ref.PID, Epoch: ref.Epoch, Txn: ref.Txn}, ttl)
				if !fits {
					codes[i][j] = kerr.InvalidCommitOffsetSize.Code
					continue
				}
				seen[key] = true
				val, _ := json.Marshal(stageOffset{Group: req.Group, Topic: rt.Topic, Partition: p.Partition, Offset: p.Offset, Metadata: md, ProtocolType: ptype})
				ops = append(ops, queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: val, TTLSeconds: ttl})
				pends = append(pends, pend)
			}
		}
		if len(ops) == 0 {
			return 0
		}
		if len(ops) > MaxOffsets {
			s.poison(ctx, cl, portionKey{k, ref}, mk, "more than 62 offsets")
			return kerr.InvalidCommitOffsetSize.Code
		}
		// The pending index (qk:txnpend:, OffsetFetch's require_stable)
		// goes in the same call, after the row's read-back, and last the
		// group's fence (coordinator.TxnFence): the offsets and their
		// pending rows are staged only while this node still coordinates
		// the group, so a node that lost it can no longer let its members
		// commit beside the new owner's (a new owner's member reading its
		// starting offsets after the claim sees these pending rows).
		count := queen.KVOp{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: prefix + "o:", Limit: riderOps + 1, KeysOnly: true}
		call := append(append(ops, rowOp(k.ID), count), pends...)
		gcl := coordinator.Client{Identity: cl.Identity}
		fenceAt := -1
		if f, ok := s.groups.TxnFence(gcl, req.Group); ok {
			fenceAt, call = len(call), append(call, f)
		}
		res, err := s.kv(cl).KV(ctx, call)
		if pe := (*queen.PreconditionError)(nil); fenceAt >= 0 && errors.As(err, &pe) && pe.Index == fenceAt {
			if code := s.groups.TxnFenceLost(gcl, req.Group, pe); code != 0 || attempt > 0 {
				return cmp.Or(code, kerr.ConcurrentTransactions.Code)
			}
			continue // this node's own write moved its fence: stage again
		}
		if err != nil {
			s.log.Warn("staging transactional offsets failed", "transactional_id", k.ID, "err", err)
			return s.fault(err)
		}
		now, ok := s.remember(k, res[len(ops)])
		if c, _ := verdict(now, ok, req.ProducerID, req.ProducerEpoch, fenced); c != 0 {
			return c
		}
		if now.Seq != mk.Seq {
			if attempt > 0 {
				return kerr.ConcurrentTransactions.Code
			}
			// The cache named a decided transaction: stage into the open
			// one (what this call wrote is unreachable, and expires).
			mk = now
			continue
		}
		staged := res[len(ops)+1]
		groups := map[string]bool{}
		for _, r := range staged.Rows {
			g, _, _ := strings.Cut(strings.TrimPrefix(r.Key, prefix+"o:"), ":")
			groups[g] = true
		}
		if staged.Truncated || 1+len(groups)+len(staged.Rows) > riderOps {
			s.poison(ctx, cl, portionKey{k, ref}, mk, "more than 62 offsets (less one per further group)")
			return kerr.InvalidCommitOffsetSize.Code
		}
		return 0
	}
}
