package dev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultMaxBodyBytes is QUEEN_MAX_BODY_BYTES's default (§0).
const DefaultMaxBodyBytes = 64 << 20

// DefaultTenant is the one tenant every caller acts for when auth is off.
const DefaultTenant = "local"

// Options configure a Broker. The zero value is a memory-only, single-tenant
// broker without fault injection, which is what other packages' unit tests
// want behind httptest.NewServer(b.Handler()).
type Options struct {
	// Dir holds the store (an embedded pebble database). "" keeps it in
	// memory only.
	Dir string
	// CacheBytes is the store's block cache; 0 means DefaultCacheBytes.
	CacheBytes int64
	// FsyncAlways makes every acknowledgement wait for the fsync of its
	// write-ahead log record (concurrent requests share one). Off (the
	// default), a request is acknowledged once its log record is written
	// to the log file (it survives a kill -9 of the process, not an OS
	// crash) and the log is fsynced every FsyncInterval in the background.
	FsyncAlways bool
	// FsyncInterval is that background fsync's period without
	// FsyncAlways; 0 means DefaultFsyncInterval, negative none (tests).
	FsyncInterval time.Duration
	// Now is the clock for record ts, KV expiry and retention (tests inject
	// a fake one). nil means time.Now.
	Now func() time.Time
	// Tokens turns auth on when not empty: bearer token → tenant and role.
	Tokens map[string]Token
	// Faults enables /dev/faults (loopback callers only; an admin token
	// too when Tokens is set).
	Faults bool
	// MaxBodyBytes caps request bodies (413 above); 0 means the default.
	MaxBodyBytes int64
	// SweepInterval is the retention/expiry sweep cadence; 0 means one
	// second, negative disables the background sweep (tests call Sweep).
	SweepInterval time.Duration
	// Logger receives operational log lines; nil means slog.Default().
	Logger *slog.Logger
	// BareVerdicts answers a transaction rolled back on a lost KV
	// precondition without its failedIndex, kvReason, version and value
	// (all null), as §7.4 lets a server that could not report them: a
	// client must still decide from what the contract promises (a read of
	// the row). Off, they are reported, as the real server normally does.
	BareVerdicts bool
	// Status adds top-level blocks to GET /status beside "status":"ok"
	// (cmd/queen-dev adds "kafka" in embedded mode); nil adds none.
	Status func() map[string]any

	// fs replaces the store's file system (tests inject failures).
	fs vfs.FS
}

// Broker is a Queen-compatible development broker on an embedded storage
// engine: records, KV rows and metadata in the store, only small
// per-partition metadata in memory.
type Broker struct {
	opts    Options
	log     *slog.Logger
	maxBody int64
	limits  connLimits // of Server

	mu  sync.Mutex
	st  *state
	db  *pebble.DB
	dur *durability
	// pushBatches keeps the push route's engine batches for the next
	// push (store.go).
	pushBatches batchCache

	// life is held (read) by every request while it uses the store outside
	// mu, and taken by Close before it closes the store; closed turns away
	// those that come after.
	life   sync.RWMutex
	closed bool // set under mu and life

	faults faultSet

	closing   chan struct{} // closed by Drain: parked fetches answer at once
	drainOnce sync.Once
	closeOnce sync.Once
	closeErr  error
	sweepStop chan struct{}
	sweepDone chan struct{}
	walStop   chan struct{}
	walDone   chan struct{}

	panics atomic.Int64 // recovered handler panics (tests assert zero)

	// Boot describes what New loaded.
	Boot BootInfo
}

// BootInfo reports what New loaded from the store: metadata only, so boot
// time does not grow with the data stored.
type BootInfo struct {
	Queues     int
	Partitions int
	Took       time.Duration
}

// New opens (or creates) the broker's store and loads its metadata. With
// Options.Dir empty the store is in memory.
func New(opts Options) (*Broker, error) {
	b := &Broker{
		opts:      opts,
		log:       opts.Logger,
		maxBody:   opts.MaxBodyBytes,
		limits:    defaultLimits,
		st:        newState(),
		dur:       newDurability(),
		closing:   make(chan struct{}),
		sweepStop: make(chan struct{}),
		sweepDone: make(chan struct{}),
		walStop:   make(chan struct{}),
		walDone:   make(chan struct{}),
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.maxBody <= 0 {
		b.maxBody = DefaultMaxBodyBytes
	}
	start := time.Now()
	db, wal, err := openEngine(opts.Dir, opts.CacheBytes, opts.fs, opts.FsyncAlways, engineLogger{log: b.log, fail: b.dur.fail})
	if err != nil {
		return nil, err
	}
	b.db = db
	if err := b.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("load %s: %w", opts.Dir, err)
	}
	b.Boot.Took = time.Since(start)
	interval := opts.SweepInterval
	if interval == 0 {
		interval = time.Second
	}
	if interval > 0 {
		go b.sweepLoop(interval)
	} else {
		close(b.sweepDone)
	}
	every := opts.FsyncInterval
	if every == 0 {
		every = DefaultFsyncInterval
	}
	if wal != nil && every > 0 {
		go b.walSyncLoop(wal, every, b.walStop, b.walDone)
	} else {
		close(b.walDone)
	}
	return b, nil
}

// load reads the metadata kinds: the KV version counter, every queue and
// every partition's log end and start.
func (b *Broker) load() error {
	if err := b.refuseOldLayout(); err != nil {
		return err
	}
	if v, closer, err := b.db.Get(keyKVSeq()); err == nil {
		if len(v) == 8 {
			b.st.kvSeq = int64(binary.BigEndian.Uint64(v))
		}
		closer.Close()
	} else if !errors.Is(err, pebble.ErrNotFound) {
		return err
	}
	byID := map[string]*queue{}
	err := b.scan([]byte{kindQueue}, func(k, v []byte) error {
		tn, name, err := readLP(k[1:])
		if err != nil {
			return err
		}
		id, created, opts, err := decodeQueue(v)
		if err != nil {
			return fmt.Errorf("queue %q: %w", name, err)
		}
		q := newQueue(string(name), id, created, opts)
		b.st.tenant(tn).queues[q.name] = q
		byID[id] = q
		b.Boot.Queues++
		return nil
	})
	if err != nil {
		return err
	}
	return b.scan([]byte{kindPart}, func(k, v []byte) error {
		qid, name, err := readLP(k[1:])
		if err != nil {
			return err
		}
		q := byID[qid]
		if q == nil {
			return nil // deleted with its queue in the same batch; never expected
		}
		p := &partition{name: string(name), waiters: map[*waiter]struct{}{}}
		if err := decodePart(v, p); err != nil {
			return fmt.Errorf("partition %q of %q: %w", name, q.name, err)
		}
		p.dedupFloor = p.lso
		q.parts[p.name] = p
		b.Boot.Partitions++
		return nil
	})
}

// errOldLayout refuses a store written with one key per record (kinds r
// and e), the layout before batches: its records are not read by this
// queen-dev, and serving its queues without them would lose them silently.
var errOldLayout = errors.New("the store holds records in the layout of an older queen-dev (one key per record), which this one does not read: " +
	"drain what you need with the older queen-dev, then move the directory aside (or delete it) to start empty")

// refuseOldLayout looks for any key of the old record kinds: two seeks,
// whatever the store holds.
func (b *Broker) refuseOldLayout() error {
	for _, kind := range []byte{kindOldRecord, kindOldAge} {
		it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kind}, UpperBound: []byte{kind + 1}})
		if err != nil {
			return err
		}
		found := it.First()
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
		if found {
			return errOldLayout
		}
	}
	return nil
}

// scan calls fn for every key with prefix.
func (b *Broker) scan(prefix []byte, fn func(k, v []byte) error) error {
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// enter admits a request to the store (false once Close has begun); the
// caller calls leave when done with it, including its durability wait.
func (b *Broker) enter() bool {
	b.life.RLock()
	if b.closed {
		b.life.RUnlock()
		return false
	}
	return true
}

func (b *Broker) leave() { b.life.RUnlock() }

// Drain makes every parked fetch answer now and every new one answer
// without parking; call it before http.Server.Shutdown so draining does
// not wait out long polls.
func (b *Broker) Drain() {
	b.drainOnce.Do(func() { close(b.closing) })
}

// Close drains, stops the sweep, waits for requests using the store,
// flushes its memtables (so that the next boot has no log to replay) and
// closes it. Requests after Close get
// errors.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.Drain()
		close(b.sweepStop)
		<-b.sweepDone
		close(b.walStop) // the store's Close fsyncs the log itself
		<-b.walDone
		b.life.Lock()
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		b.life.Unlock()
		failed := b.dur.err()
		if failed == nil {
			// Flushed memtables make the next boot replay nothing.
			failed = b.db.Flush()
		}
		b.closeErr = errors.Join(failed, b.db.Close())
	})
	return b.closeErr
}

func (b *Broker) now() time.Time {
	if b.opts.Now != nil {
		return b.opts.Now()
	}
	return time.Now()
}

func (b *Broker) authOn() bool { return len(b.opts.Tokens) > 0 }

// Mutations counts applied state changes (for tests proving a refused
// request wrote nothing).
func (b *Broker) Mutations() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.mutations
}

// Panics counts handler panics recovered so far (each answered 500).
func (b *Broker) Panics() int64 { return b.panics.Load() }

// Tenants is the number of distinct tenants tokens map to (1 when auth is off).
func (b *Broker) Tenants() int {
	if !b.authOn() {
		return 1
	}
	seen := map[string]bool{}
	for _, t := range b.opts.Tokens {
		seen[t.Tenant] = true
	}
	return len(seen)
}
