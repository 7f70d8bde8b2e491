package sharepartition

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/twmb/franz-go/pkg/kerr"
)

// KV is the one Queen route the state needs. *queen.Client satisfies it.
type KV interface {
	KV(ctx context.Context, ops []queen.KVOp) ([]queen.KVResult, error)
}

// Key names one share-partition.
type Key struct {
	Group, Topic string
	Partition    int32
}

func (k Key) kvKey() string { return queen.ShareStateKey(k.Group, k.Topic, k.Partition) }

// Initializer is the SPSO of a share-partition that has no state yet (its
// group's share.auto.offset.reset applied to the log: see ResetInitializer).
type Initializer func(ctx context.Context) (int64, error)

// ErrContended is a write that lost its compare-and-set twice in a row:
// other nodes keep changing the partition. Nothing was applied; the
// request's records stay as they were (an acknowledgement not applied
// leaves its records acquired until their locks expire). Its code is
// COORDINATOR_NOT_AVAILABLE, a retriable code the share consumers retry.
var ErrContended = &Error{Code: kerr.CoordinatorNotAvailable.Code, Message: "share-partition state changed concurrently twice; retry"}

// MaxRowBytes is the KV's value ceiling (queen-api.md §7.3). A default
// window (2,000 records) in the worst shape, every record its own range
// acquired by its own member, takes about 60 KB with Kafka's default group
// size (200 members); wider windows or more fragmentation can exceed it.
const MaxRowBytes = 65536

// ErrRowTooLarge is a change whose row would pass MaxRowBytes: nothing was
// applied. Fetch retries without its acquisition; an acknowledgement so
// fragmenting is refused UNKNOWN_SERVER_ERROR and its records expire back
// to available (which merges ranges) as any unacknowledged delivery does.
var ErrRowTooLarge = &Error{Code: kerr.UnknownServerError.Code, Message: "share-partition state would exceed the KV value limit"}

// Handle is one share-partition's state as this node caches it, and the
// only way to change it: every change is one compare-and-set put of the
// whole row, fenced on the version it was computed from, made before the
// caller answers. Any node may hold a Handle for any share-partition; a
// stale cache costs a lost compare-and-set, never a wrong answer.
type Handle struct {
	key   Key
	kvKey string
	cfg   Config
	init  Initializer

	mu      sync.Mutex
	p       *Partition // nil until loaded, or after an unknown write outcome
	version int64      // the row's version p came from
	row     []byte     // and that row
	writes  uint64
}

// NewHandle is a handle that loads lazily, initializing an absent row
// with init's SPSO.
func NewHandle(key Key, cfg Config, init Initializer) *Handle {
	return &Handle{key: key, kvKey: key.kvKey(), cfg: cfg, init: init}
}

// Key is the share-partition's name.
func (h *Handle) Key() Key { return h.key }

// Writes is the number of KV writes this handle made (applied or not).
func (h *Handle) Writes() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.writes
}

// SetConfig changes the limits from now on.
func (h *Handle) SetConfig(cfg Config) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cfg = cfg
	if h.p != nil {
		h.p.SetConfig(cfg)
	}
}

// Invalidate drops the cache: the next call reads the row again.
func (h *Handle) Invalidate() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.p = nil
}

// Update runs fn on the partition and, if fn changed it, writes the result
// with one compare-and-set put before returning. fn must either change the
// partition or return an error, never both (Partition's methods are all or
// nothing), and must set its results afresh on every run: when the put
// loses to another node's write, fn runs once more on the state that won,
// and its second outcome is the answer. When fn changes nothing or fails,
// the row is read once more (unless this call already read it): a cache
// behind another node's writes could otherwise refuse an acknowledgement
// the member is entitled to, or find nothing to acquire.
func (h *Handle) Update(ctx context.Context, kv KV, fn func(p *Partition) error) error {
	// h.mu is held across the KV calls on purpose: fn changes h.p in place
	// before the put that makes it durable, so releasing the lock would let
	// another request on this node answer from (and build on) state not yet
	// written, and its put, fenced on the same h.version, would lose the
	// compare-and-set to ours. Holding it orders this node's writes to the
	// row, leaving only other nodes to lose to; the cost is one KV round
	// trip of latency per request queued on the same share-partition.
	h.mu.Lock()
	defer h.mu.Unlock()
	fresh := false
	if h.p == nil {
		if err := h.load(ctx, kv); err != nil {
			return err
		}
		fresh = true
	}
	lost := false
	for {
		gen := h.p.Generation()
		err := fn(h.p)
		if err != nil || h.p.Generation() == gen {
			if fresh {
				return err
			}
			fresh = true
			old := h.version
			if rerr := h.load(ctx, kv); rerr != nil {
				return rerr
			}
			if h.version == old {
				return err
			}
			continue
		}
		row := h.p.Encode()
		if len(row) > MaxRowBytes {
			// The KV refuses a value this large: undo fn's change.
			stats := h.p.Stats()
			if derr := h.decode(h.row, h.version); derr != nil {
				return derr
			}
			h.p.stats = stats
			return ErrRowTooLarge
		}
		applied, res, werr := h.put(ctx, kv, h.version, row)
		if werr != nil {
			h.p = nil // the outcome is unknown: read it next time
			return werr
		}
		if applied {
			h.version, h.row = res.Version, row
			return nil
		}
		if lost {
			h.p = nil
			return ErrContended
		}
		lost, fresh = true, true
		if err := h.adopt(ctx, kv, res); err != nil {
			return err
		}
	}
}

// View runs fn on the cached partition (loading it first if needed) and
// writes nothing. Lock expiry inside fn is fine: it is not a change.
func (h *Handle) View(ctx context.Context, kv KV, fn func(p *Partition)) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p == nil {
		if err := h.load(ctx, kv); err != nil {
			return err
		}
	}
	fn(h.p)
	return nil
}

// load reads the row, initializing it when absent.
func (h *Handle) load(ctx context.Context, kv KV) error {
	rows, err := queen.ReadKeys(ctx, kv, []string{h.kvKey}, 1)
	if err != nil {
		return err
	}
	row, ok := rows[h.kvKey]
	if !ok {
		return h.initialize(ctx, kv)
	}
	return h.decode(row.Value, row.Version)
}

// adopt takes the row a lost put was answered with (absent: deleted by
// DeleteShareGroupOffsets, so initialized afresh).
func (h *Handle) adopt(ctx context.Context, kv KV, res queen.KVResult) error {
	if res.Version == 0 {
		return h.initialize(ctx, kv)
	}
	return h.decode(res.Value, res.Version)
}

func (h *Handle) decode(value []byte, version int64) error {
	p, err := Decode(value, h.cfg)
	if err != nil {
		h.p = nil
		return fmt.Errorf("%s: %w", h.kvKey, err)
	}
	h.p, h.version, h.row = p, version, value
	return nil
}

// initialize creates the row at init's SPSO; a node that loses the race
// takes the winner's row.
func (h *Handle) initialize(ctx context.Context, kv KV) error {
	spso, err := h.init(ctx)
	if err != nil {
		h.p = nil
		return err
	}
	p := New(h.cfg, max(spso, 0))
	row := p.Encode()
	applied, res, err := h.put(ctx, kv, 0, row)
	if err != nil {
		h.p = nil
		return err
	}
	if applied {
		h.p, h.version, h.row = p, res.Version, row
		return nil
	}
	if res.Version == 0 { // deleted again in between: give up this time
		h.p = nil
		return ErrContended
	}
	return h.decode(res.Value, res.Version)
}

// put writes value with expect (0: only if absent).
func (h *Handle) put(ctx context.Context, kv KV, expect int64, value []byte) (bool, queen.KVResult, error) {
	h.writes++
	res, err := kv.KV(ctx, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: h.kvKey, Value: value, Forever: true, Expect: &expect}})
	if err != nil {
		return false, queen.KVResult{}, fmt.Errorf("share state put: %w", err)
	}
	if len(res) != 1 {
		return false, queen.KVResult{}, errors.New("share state put: not one result")
	}
	return res[0].Applied, res[0], nil
}

// Fetch is ShareFetch's work on one partition, as one write: member's
// piggy-backed acknowledgements (refused or not: ackErr, answered as the
// partition's acknowledge_error_code) and then an acquisition of up to
// maxRecords among first..last, the offsets the caller's log read asked
// from (NextFetchOffset) returned. err is the write's failure: nothing was
// acquired and no acknowledgement applied. When from is no longer the
// next fetch offset (another node moved the state, or an admin reset it),
// offsets between SPEO and first are not taken for absent from the log:
// nothing past SPEO+1 is acquired and the caller reads again.
func (h *Handle) Fetch(ctx context.Context, kv KV, member string, acks []AckBatch, from, first, last int64, maxRecords int, now time.Time) (acquired []AcquiredRange, ackErr error, err error) {
	run := func(maxRecords int) error {
		return h.Update(ctx, kv, func(p *Partition) error {
			ackErr = nil
			if len(acks) > 0 {
				ackErr = p.Acknowledge(member, acks, now)
			}
			acquired = nil
			if first <= p.SPEO()+1 || from == p.NextFetchOffset(now) {
				acquired = p.Acquire(member, first, last, maxRecords, now)
			}
			return nil
		})
	}
	err = run(maxRecords)
	if errors.Is(err, ErrRowTooLarge) {
		acquired = nil
		err = run(0) // the window is too fragmented to grow: acknowledge only
	}
	if err != nil {
		return nil, nil, err
	}
	return acquired, ackErr, nil
}

// Acknowledge is ShareAcknowledge's work on one partition: one write,
// durable before it returns nil.
func (h *Handle) Acknowledge(ctx context.Context, kv KV, member string, acks []AckBatch, now time.Time) error {
	return h.Update(ctx, kv, func(p *Partition) error { return p.Acknowledge(member, acks, now) })
}

// ReleaseMember gives back what member holds (it left or was fenced).
func (h *Handle) ReleaseMember(ctx context.Context, kv KV, member string, now time.Time) (released int, err error) {
	err = h.Update(ctx, kv, func(p *Partition) error {
		released = p.ReleaseMember(member, now)
		return nil
	})
	return released, err
}

// NextFetchOffset is where the caller reads the log from next (from the
// cache: a stale answer costs a rerun in Fetch, never a wrong acquisition).
func (h *Handle) NextFetchOffset(ctx context.Context, kv KV, now time.Time) (next int64, err error) {
	err = h.View(ctx, kv, func(p *Partition) { next = p.NextFetchOffset(now) })
	return next, err
}

// Sweep expires the cached partition's locks at now (for metrics between
// requests; no KV call, nothing to write) and reports how many expired.
func (h *Handle) Sweep(now time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p == nil {
		return 0
	}
	return h.p.Sweep(now)
}

// InFlight is the cached partition's offsets between SPSO and SPEO (0
// before it loads).
func (h *Handle) InFlight() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p == nil {
		return 0
	}
	return h.p.InFlight()
}

// Stats are the cached partition's counters (zero before it loads; a
// reload starts them afresh).
func (h *Handle) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.p == nil {
		return Stats{}
	}
	return h.p.Stats()
}
