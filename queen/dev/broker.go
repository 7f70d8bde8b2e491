package dev

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxBodyBytes is QUEEN_MAX_BODY_BYTES's default (§0).
const DefaultMaxBodyBytes = 64 << 20

// DefaultTenant is the one tenant every caller acts for when auth is off.
const DefaultTenant = "local"

// walName is the log file inside Options.Dir.
const walName = "wal.log"

// Options configure a Broker. The zero value is a memory-only, single-tenant
// broker without fault injection, which is what other packages' unit tests
// want behind httptest.NewServer(b.Handler()).
type Options struct {
	// Dir holds the write-ahead log. "" keeps everything in memory only.
	Dir string
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
}

// Broker is a Queen-compatible development broker: authoritative state in
// memory, made durable by a write-ahead log when Options.Dir is set.
type Broker struct {
	opts    Options
	log     *slog.Logger
	maxBody int64
	limits  connLimits // of Server

	mu sync.Mutex
	st *state

	wal      *wal     // nil when memory-only
	lockFile *os.File // flock on Dir, so two processes never share a log

	faults faultSet

	closing   chan struct{} // closed by Drain: parked fetches answer at once
	drainOnce sync.Once
	closeOnce sync.Once
	closeErr  error
	sweepStop chan struct{}
	sweepDone chan struct{}

	panics atomic.Int64 // recovered handler panics (tests assert zero)

	// Replay describes what New found in the log.
	Replay ReplayInfo
}

// ReplayInfo reports the boot-time replay of the write-ahead log.
type ReplayInfo struct {
	Frames    int   // intact frames replayed
	Bytes     int64 // bytes of intact frames
	TornBytes int64 // bytes of a torn tail that were truncated
	Compacted int64 // size of the rewritten log, 0 if boot did not compact
}

// New opens (or creates) the broker's storage and replays it. With
// Options.Dir empty it cannot fail.
func New(opts Options) (*Broker, error) {
	b := &Broker{
		opts:      opts,
		log:       opts.Logger,
		maxBody:   opts.MaxBodyBytes,
		limits:    defaultLimits,
		st:        newState(),
		closing:   make(chan struct{}),
		sweepStop: make(chan struct{}),
		sweepDone: make(chan struct{}),
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.maxBody <= 0 {
		b.maxBody = DefaultMaxBodyBytes
	}
	if opts.Dir != "" {
		if err := b.openStorage(opts.Dir); err != nil {
			return nil, err
		}
	}
	interval := opts.SweepInterval
	if interval == 0 {
		interval = time.Second
	}
	if interval > 0 {
		go b.sweepLoop(interval)
	} else {
		close(b.sweepDone)
	}
	return b, nil
}

func (b *Broker) openStorage(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	lf, err := lockDir(filepath.Join(dir, "LOCK"))
	if err != nil {
		return fmt.Errorf("data dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, walName), os.O_RDWR|os.O_CREATE, 0o644)
	if err == nil {
		// A new log's directory entry must be durable too, or a power loss
		// could drop the whole file along with every fsynced frame.
		err = syncDir(dir)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		lf.Close()
		return fmt.Errorf("open log: %w", err)
	}
	res, err := replay(f, func(ops []op) error {
		for _, o := range ops {
			if err := o.apply(b.st); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		f.Close()
		lf.Close()
		return fmt.Errorf("replay %s: %w", filepath.Join(dir, walName), err)
	}
	b.Replay = ReplayInfo{Frames: res.frames, Bytes: res.validEnd, TornBytes: res.tornBytes}
	if res.tornBytes > 0 {
		b.log.Warn("queen-dev: truncated a torn log tail", "bytes", res.tornBytes, "kept", res.validEnd)
	}
	// A log mostly made of dead bytes (overwritten KV rows, deleted queues,
	// retired records) is rewritten as a snapshot of the live state.
	if live := b.st.liveBytes(); res.validEnd > compactMinBytes && res.validEnd > 2*live {
		f.Close()
		n, err := compactLog(dir, b.st, b.now().UnixMicro())
		if err != nil {
			lf.Close()
			return err
		}
		b.log.Info("queen-dev: compacted the log", "from_bytes", res.validEnd, "to_bytes", n)
		b.Replay.Compacted = n
		if f, err = os.OpenFile(filepath.Join(dir, walName), os.O_RDWR, 0o644); err == nil {
			_, err = f.Seek(0, io.SeekEnd)
		}
		if err != nil {
			lf.Close()
			return fmt.Errorf("reopen compacted log: %w", err)
		}
	}
	b.lockFile = lf
	b.wal = startWAL(f)
	return nil
}

// Drain makes every parked fetch answer now and every new one answer
// without parking; call it before http.Server.Shutdown so draining does
// not wait out long polls.
func (b *Broker) Drain() {
	b.drainOnce.Do(func() { close(b.closing) })
}

// Close drains, stops the sweep, flushes and syncs the log and releases the
// data directory. Requests still in flight after Close get errors.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.Drain()
		close(b.sweepStop)
		<-b.sweepDone
		var errs []error
		if b.wal != nil {
			errs = append(errs, b.wal.close())
		}
		if b.lockFile != nil {
			errs = append(errs, b.lockFile.Close())
		}
		b.closeErr = errors.Join(errs...)
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

// commit applies ops to memory and queues them as one WAL frame. The caller
// holds b.mu and waits on the returned batch (outside the lock) before
// acknowledging. A failing apply is a bug in the caller's decision logic;
// the ops before it stay applied, so it is reported loudly.
func (b *Broker) commit(ops []op) (*batch, error) {
	for _, o := range ops {
		if err := o.apply(b.st); err != nil {
			b.log.Error("queen-dev: apply failed", "err", err)
			return nil, err
		}
	}
	return b.logApplied(ops), nil
}

// logApplied queues ops the caller has already applied and returns the
// batch to wait for before acknowledging. With nothing to log that is the
// newest batch: the answer may still rest on state another request has not
// yet made durable (a duplicate push names records still being synced).
func (b *Broker) logApplied(ops []op) *batch {
	if b.wal == nil {
		return nil
	}
	if len(ops) == 0 {
		return b.wal.tail()
	}
	return b.wal.append(ops)
}

// observed returns the batch a reader must wait for so that it never
// answers with state that a crash could still take back.
func (b *Broker) observed() *batch {
	if b.wal == nil {
		return nil
	}
	return b.wal.tail()
}

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
