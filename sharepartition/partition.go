package sharepartition

import (
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecordState is a record's state, numbered as Kafka's RecordState (and its
// share coordinator's persisted delivery_state).
type RecordState uint8

const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", uint8(s))
}

// AckType is an acknowledgement type as ShareFetch/ShareAcknowledge carry it.
type AckType int8

const (
	Gap     AckType = 0 // an offset with no record (a control record, a hole): archived
	Accept  AckType = 1 // processed: ACKNOWLEDGED, final
	Release AckType = 2 // give it back: AVAILABLE at once, delivery count kept
	Reject  AckType = 3 // unprocessable: ARCHIVED, never delivered again
	Renew   AckType = 4 // still processing (KIP-1222): the lock restarts, the record stays the member's
)

// Kafka's defaults and bounds (ShareGroupConfig / GroupConfig, 4.x).
const (
	DefaultLockDuration  = 30 * time.Second // group.share.record.lock.duration.ms
	DefaultDeliveryLimit = 5                // group.share.delivery.count.limit, [2, 10]
	MinDeliveryLimit     = 2
	MaxDeliveryLimit     = 10
	DefaultMaxLocks      = 2000 // group.share.partition.max.record.locks, [100, 10000]
	MinMaxLocks          = 100
	MaxMaxLocks          = 10000
)

// Config is one share-partition's limits, as the group's configs give them.
type Config struct {
	LockDuration  time.Duration
	DeliveryLimit int
	MaxLocks      int
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{LockDuration: DefaultLockDuration, DeliveryLimit: DefaultDeliveryLimit, MaxLocks: DefaultMaxLocks}
}

// Validate refuses a config outside Kafka's bounds for the delivery limit
// and the in-flight window (the lock duration's bounds are the config
// layer's: any positive duration works here).
func (c Config) Validate() error {
	switch {
	case c.LockDuration <= 0:
		return fmt.Errorf("share lock duration %v: must be positive", c.LockDuration)
	case c.DeliveryLimit < MinDeliveryLimit || c.DeliveryLimit > MaxDeliveryLimit:
		return fmt.Errorf("share delivery count limit %d: must be in [%d, %d]", c.DeliveryLimit, MinDeliveryLimit, MaxDeliveryLimit)
	case c.MaxLocks < 1 || c.MaxLocks > MaxMaxLocks:
		return fmt.Errorf("share partition max record locks %d: must be in [1, %d]", c.MaxLocks, MaxMaxLocks)
	}
	return nil
}

// record is one in-flight offset. member and deadline mean something only
// while Acquired.
type record struct {
	member   string
	deadline int64 // unix ms the lock ends
	count    int16 // deliveries so far
	state    RecordState
}

// AcquiredRange is a range of offsets handed to a member, all delivered the same
// number of times (ShareFetch's AcquiredRecords).
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// AckBatch is one acknowledgement batch: Types holds one type for the whole
// range or one per offset, as the wire carries them.
type AckBatch struct {
	First, Last int64
	Types       []AckType
}

// Error is a refusal with the Kafka error code the partition is answered.
type Error struct {
	Code    int16
	Message string
}

func (e *Error) Error() string { return e.Message }

func invalidRequest(format string, a ...any) *Error {
	return &Error{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf(format, a...)}
}

func invalidRecordState(format string, a ...any) *Error {
	return &Error{Code: kerr.InvalidRecordState.Code, Message: fmt.Sprintf(format, a...)}
}

// Stats are a partition's counters since it was made (the caller diffs them
// into metrics).
type Stats struct {
	Acquisitions uint64                       // records acquired
	Deliveries   [MaxDeliveryLimit + 1]uint64 // acquisitions by the delivery count they reached (the last slot: that or more)
	Accepted     uint64
	Released     uint64 // by RELEASE or a member's leaving
	Rejected     uint64
	Archived     uint64 // records archived for any reason (reject, gap, delivery limit, log start)
	LockExpiries uint64
	Renewed      uint64 // locks renewed (KIP-1222)
}

// Partition is one share-partition's state machine. It does no I/O and
// reads no clock; it is not safe for concurrent use (Store serializes).
type Partition struct {
	cfg        Config
	spso       int64
	recs       []record // recs[i] is offset spso+i
	nextExpiry int64    // earliest lock deadline, MaxInt64 when none
	gen        uint64   // bumped by every change a write must carry
	stats      Stats
}

// New is a partition with no in-flight records starting at spso.
func New(cfg Config, spso int64) *Partition {
	return &Partition{cfg: cfg, spso: spso, nextExpiry: math.MaxInt64}
}

// Config is the partition's limits.
func (p *Partition) Config() Config { return p.cfg }

// SetConfig changes the limits (a group config altered). A lowered delivery
// limit applies when each in-flight delivery completes, as KIP-1240 says.
func (p *Partition) SetConfig(cfg Config) { p.cfg = cfg }

// SPSO is the share-partition start offset: every offset below it is
// acknowledged or archived.
func (p *Partition) SPSO() int64 { return p.spso }

// SPEO is the share-partition end offset: the last in-flight offset, SPSO-1
// when nothing is in flight.
func (p *Partition) SPEO() int64 { return p.spso + int64(len(p.recs)) - 1 }

// Stats are the counters so far.
func (p *Partition) Stats() Stats { return p.stats }

// Generation changes whenever the partition changes in a way its durable
// form must carry (lock expiry does not: it follows from the stored
// deadline on any node).
func (p *Partition) Generation() uint64 { return p.gen }

// InFlight is the number of offsets between SPSO and SPEO.
func (p *Partition) InFlight() int { return len(p.recs) }

// State is one in-flight offset's state, delivery count and holder (ok is
// false outside SPSO..SPEO). It does not expire locks.
func (p *Partition) State(offset int64) (state RecordState, count int16, member string, ok bool) {
	if offset < p.spso || offset > p.SPEO() {
		return 0, 0, "", false
	}
	r := p.recs[offset-p.spso]
	return r.state, r.count, r.member, true
}

// NextFetchOffset is where the caller should read the log from: the first
// available in-flight offset, else the one past SPEO.
func (p *Partition) NextFetchOffset(now time.Time) int64 {
	p.expire(now.UnixMilli())
	for i := range p.recs {
		if p.recs[i].state == Available {
			return p.spso + int64(i)
		}
	}
	return p.SPEO() + 1
}

// CanAcquire reports whether an acquisition could hand out anything: an
// available in-flight record, or room in the window past SPEO.
func (p *Partition) CanAcquire(now time.Time) bool {
	next := p.NextFetchOffset(now)
	return next <= p.SPEO() || len(p.recs) < p.cfg.MaxLocks
}

// Acquire hands member up to maxRecords records among first..last (offsets
// the caller read from the log, reading from NextFetchOffset), locked until
// now plus the lock duration. Available in-flight records are acquired
// again with their delivery count incremented; records past SPEO join the
// window while it holds fewer than MaxLocks offsets. A record already
// delivered DeliveryLimit times is archived instead (possible only after
// the limit was lowered). Offsets between SPEO and first hold no record
// (the log has none there) and are archived.
func (p *Partition) Acquire(member string, first, last int64, maxRecords int, now time.Time) []AcquiredRange {
	nowMs := now.UnixMilli()
	p.expire(nowMs)
	first = max(first, p.spso)
	if member == "" || last < first || maxRecords <= 0 {
		return nil
	}
	deadline := nowMs + p.cfg.LockDuration.Milliseconds()
	var out []AcquiredRange
	n := 0
	take := func(off int64, r *record) {
		r.state, r.member, r.deadline = Acquired, member, deadline
		r.count++
		p.stats.Acquisitions++
		p.stats.Deliveries[min(int(r.count), MaxDeliveryLimit)]++
		if k := len(out) - 1; k >= 0 && out[k].Last == off-1 && out[k].DeliveryCount == r.count {
			out[k].Last = off
		} else {
			out = append(out, AcquiredRange{First: off, Last: off, DeliveryCount: r.count})
		}
		n++
	}
	end := p.SPEO()
	for off := first; off <= min(last, end) && n < maxRecords; off++ {
		r := &p.recs[off-p.spso]
		if r.state != Available {
			continue
		}
		if int(r.count) >= p.cfg.DeliveryLimit {
			r.state = Archived
			p.stats.Archived++
			p.gen++
			continue
		}
		// As Kafka 4.2, a record on its last attempt is delivered alone,
		// so a poison record cannot use up its neighbours' attempts.
		last := p.cfg.DeliveryLimit > 2 && int(r.count) == p.cfg.DeliveryLimit-1
		if last && n > 0 {
			return p.finishAcquire(out, n, deadline)
		}
		take(off, r)
		if last {
			return p.finishAcquire(out, n, deadline)
		}
	}
	if last > end && n < maxRecords {
		if len(p.recs) == 0 && first > p.spso {
			// Nothing in flight and the log starts later: no record
			// below first exists to track.
			p.spso, end = first, first-1
		}
		windowEnd := p.spso + int64(p.cfg.MaxLocks) - 1
		if first > end+1 && first-1 <= windowEnd {
			for off := end + 1; off < first; off++ {
				p.recs = append(p.recs, record{state: Archived})
				p.stats.Archived++
			}
			p.gen++
			end = first - 1
		}
		// Offsets past the window, or not read (first beyond it), wait.
		for off := end + 1; first <= off && off <= min(last, windowEnd) && n < maxRecords; off++ {
			p.recs = append(p.recs, record{})
			take(off, &p.recs[len(p.recs)-1])
		}
	}
	return p.finishAcquire(out, n, deadline)
}

func (p *Partition) finishAcquire(out []AcquiredRange, n int, deadline int64) []AcquiredRange {
	if n > 0 {
		p.gen++
		p.nextExpiry = min(p.nextExpiry, deadline)
	}
	p.advance()
	return out
}

// Acknowledge applies member's acknowledgement batches at now (a RENEW
// restarts the lock of a record member holds), all or nothing: a malformed batch, or one reaching past SPEO, is
// INVALID_REQUEST; an offset member does not hold (never acquired,
// expired, another member's, already acknowledged, nothing in flight)
// INVALID_RECORD_STATE; and then nothing changes. Batches wholly below
// SPSO are skipped, as Kafka skips them (their records are done).
func (p *Partition) Acknowledge(member string, batches []AckBatch, now time.Time) error {
	prevLast := int64(math.MinInt64)
	for _, b := range batches {
		if b.First > b.Last || b.First < 0 {
			return invalidRequest("acknowledgement batch %d..%d is empty or negative", b.First, b.Last)
		}
		if b.First <= prevLast {
			return invalidRequest("acknowledgement batches overlap or are out of order at %d", b.First)
		}
		prevLast = b.Last
		if len(b.Types) != 1 && int64(len(b.Types)) != b.Last-b.First+1 {
			return invalidRequest("acknowledgement batch %d..%d has %d types", b.First, b.Last, len(b.Types))
		}
		for _, t := range b.Types {
			if t < Gap || t > Renew {
				return invalidRequest("invalid acknowledge type %d", t)
			}
		}
	}
	p.expire(now.UnixMilli())
	end := p.SPEO()
	for _, b := range batches {
		if b.Last < p.spso {
			continue
		}
		if len(p.recs) == 0 {
			return invalidRecordState("no records in flight for %d..%d", b.First, b.Last)
		}
		if b.First > end {
			return invalidRequest("acknowledgement batch %d..%d is past the last in-flight offset %d", b.First, b.Last, end)
		}
		if b.Last > end {
			return invalidRequest("acknowledgement batch ends at %d past the last in-flight offset %d", b.Last, end)
		}
		for off := max(b.First, p.spso); off <= b.Last; off++ {
			r := &p.recs[off-p.spso]
			if r.state != Acquired || r.member != member {
				return invalidRecordState("offset %d is %s, not acquired by this member", off, r.state)
			}
		}
	}
	changed := false
	for _, b := range batches {
		if b.Last < p.spso {
			continue
		}
		for off := max(b.First, p.spso); off <= b.Last; off++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[off-b.First]
			}
			r := &p.recs[off-p.spso]
			switch t {
			case Accept:
				r.state = Acknowledged
				p.stats.Accepted++
			case Release:
				p.release(r)
				p.stats.Released++
			case Reject:
				r.state = Archived
				p.stats.Rejected++
				p.stats.Archived++
			case Gap:
				r.state = Archived
				p.stats.Archived++
			case Renew:
				// The lock restarts now, as Kafka renews it; the delivery
				// count does not change.
				r.deadline = now.UnixMilli() + p.cfg.LockDuration.Milliseconds()
				p.stats.Renewed++
				changed = true
				continue
			}
			r.member, r.deadline = "", 0
			changed = true
		}
	}
	if changed {
		p.gen++
		p.advance()
	}
	return nil
}

// ReleaseMember gives back every record member holds (it left or was
// fenced): available again with its count kept, or archived at the limit.
// It reports how many records it released.
func (p *Partition) ReleaseMember(member string, now time.Time) int {
	p.expire(now.UnixMilli())
	n := 0
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.member == member {
			p.release(r)
			p.stats.Released++
			n++
		}
	}
	if n > 0 {
		p.gen++
		p.advance()
	}
	return n
}

// Sweep expires every lock whose deadline has passed at now and reports
// how many. Every other method expires locks first too, so Sweep only
// keeps the in-memory state and metrics current between requests.
func (p *Partition) Sweep(now time.Time) int {
	before := p.stats.LockExpiries
	p.expire(now.UnixMilli())
	return int(p.stats.LockExpiries - before)
}

// AdvanceLogStart is the log's start offset moving past in-flight records
// (retention): records below it that nobody holds are archived; held ones
// finish their delivery first (their acknowledgement still counts).
func (p *Partition) AdvanceLogStart(logStart int64, now time.Time) {
	p.expire(now.UnixMilli())
	if logStart <= p.spso {
		return
	}
	if len(p.recs) == 0 {
		p.spso = logStart
		p.gen++
		return
	}
	changed := false
	for off := p.spso; off < logStart && off <= p.SPEO(); off++ {
		r := &p.recs[off-p.spso]
		if r.state == Available {
			r.state = Archived
			p.stats.Archived++
			changed = true
		}
	}
	if logStart > p.SPEO()+1 && p.allDone() {
		p.recs = p.recs[:0]
		p.spso = logStart
		changed = true
	}
	if changed {
		p.gen++
		p.advance()
	}
}

func (p *Partition) allDone() bool {
	for i := range p.recs {
		if s := p.recs[i].state; s != Acknowledged && s != Archived {
			return false
		}
	}
	return true
}

// release ends a delivery without acknowledgement.
func (p *Partition) release(r *record) {
	r.member, r.deadline = "", 0
	if int(r.count) >= p.cfg.DeliveryLimit {
		r.state = Archived
		p.stats.Archived++
		return
	}
	r.state = Available
}

// expire releases every lock past its deadline. It changes nothing the
// durable form does not already imply, so it does not bump gen.
func (p *Partition) expire(nowMs int64) {
	if nowMs < p.nextExpiry {
		return
	}
	next := int64(math.MaxInt64)
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != Acquired {
			continue
		}
		if r.deadline <= nowMs {
			p.release(r)
			p.stats.LockExpiries++
			continue
		}
		next = min(next, r.deadline)
	}
	p.nextExpiry = next
	p.advance()
}

// advance moves SPSO past the done prefix and drops those records.
func (p *Partition) advance() {
	k := 0
	for k < len(p.recs) && (p.recs[k].state == Acknowledged || p.recs[k].state == Archived) {
		k++
	}
	if k == 0 {
		return
	}
	p.spso += int64(k)
	if k == len(p.recs) {
		p.recs = p.recs[:0]
		return
	}
	// Keep the backing array from creeping forward forever.
	if k > cap(p.recs)/2 {
		p.recs = append(make([]record, 0, cap(p.recs)), p.recs[k:]...)
	} else {
		p.recs = p.recs[k:]
	}
}

// Clone is an independent copy.
func (p *Partition) Clone() *Partition {
	c := *p
	c.recs = append([]record(nil), p.recs...)
	return &c
}

// recompute sets nextExpiry from the records (after a decode).
func (p *Partition) recompute() {
	p.nextExpiry = math.MaxInt64
	for i := range p.recs {
		if p.recs[i].state == Acquired {
			p.nextExpiry = min(p.nextExpiry, p.recs[i].deadline)
		}
	}
}
