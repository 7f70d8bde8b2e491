package dev

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultCacheBytes is the engine's block cache when Options.CacheBytes is
// 0 (QUEEN_DEV_CACHE_SIZE's default).
const DefaultCacheBytes = 64 << 20

// memTableBytes is the size of one memtable; at most memTableStop of them
// (the one taking writes and the one being flushed) are held, so memtables
// cost at most 16 MiB however much is stored. Their sum is also what a
// boot after a crash (kill -9) replays from the write-ahead log and flushes
// before it answers: with 16 MiB memtables (64 MiB in all) such a boot took
// 2.7 s over a 10 GB store, against 2 s allowed. Within those 16 MiB, two
// of 8 MiB rather than four of 4: pebble applies a batch past half a
// memtable as a flushable batch of its own, which rotates the memtable and
// the log and flushes both (two more tables, a blob file, a log file closed
// with an fsync), and a push behind the facade is 1.5–3 MB (a producer's
// request); under 4 MB, none is. Half the flushes, too, each of twice the
// data (see docs/performance.md, queen-dev's CPU).
const (
	memTableBytes = 8 << 20
	memTableStop  = 2
)

// targetFileBytes is the target size of an L0 table (each level below
// doubles it). pebble counts the values a table references in blob files
// in its size, so at its default of 2 MiB a compaction's output was cut
// every few MB of referenced records: tables of a few KB of keys, some
// thousand files created, written and fsynced per GB produced, which was
// most of what compactions cost. At 64 MiB a table holds about a hundred
// KB of keys (and a flush is one table).
const targetFileBytes = 64 << 20

// legacyLog is the write-ahead log of queen-dev before the engine: a data
// directory still holding one is refused rather than silently ignored.
const legacyLog = "wal.log"

// openEngine opens (or creates) the store in dir, or in memory when dir is
// "". fs, when not nil, replaces the file system (tests inject failures).
// Unless fsyncAlways, the log's syncs go through the returned writtenWAL
// (see there); with fsyncAlways it is nil and every sync is real.
func openEngine(dir string, cacheBytes int64, fs vfs.FS, fsyncAlways bool, logger pebble.Logger) (*pebble.DB, *writtenWAL, error) {
	if fs == nil {
		if dir == "" {
			fs = vfs.NewMem()
		} else {
			fs = vfs.Default
		}
	}
	if dir != "" && fs == vfs.Default {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("data dir %s: %w", dir, err)
		}
		if _, err := os.Stat(filepath.Join(dir, legacyLog)); err == nil {
			return nil, nil, fmt.Errorf("data dir %s holds %s, the log of an older queen-dev, which this one no longer reads: move it aside (or delete the directory) to start empty",
				dir, filepath.Join(dir, legacyLog))
		}
	}
	var wal *writtenWAL
	if !fsyncAlways {
		wal = newWrittenWAL(fs)
		fs = wal
	}
	if cacheBytes <= 0 {
		cacheBytes = DefaultCacheBytes
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	opts := &pebble.Options{
		FS:                          fs,
		Cache:                       cache,
		MemTableSize:                memTableBytes,
		MemTableStopWritesThreshold: memTableStop,
		// Open files hold their index and filter blocks in the cache, not
		// beside it; the limit keeps descriptors bounded on a large store.
		MaxOpenFiles:       1000,
		Logger:             logger,
		FormatMajorVersion: pebble.FormatNewest,
	}
	// No bloom filters: the producer-dedup lookups of a push go through one
	// iterator's SeekGE (dedupReader), which never consults them, so
	// building one for every flushed and compacted table was work for
	// nothing. L0 is let to grow deeper before it is compacted, and the
	// base level larger, so that each flushed table (which overlaps every
	// partition's end of the key space) is rewritten fewer times on its way
	// down; memory is unchanged (the block cache bounds reads), and fetches
	// of recent records are served from the memtables and L0 anyway.
	opts.TargetFileSizes[0] = targetFileBytes
	opts.L0CompactionThreshold = 8
	opts.L0StopWritesThreshold = 32
	opts.LBaseMaxBytes = 256 << 20
	// Records' values (about 1 KiB behind a Kafka producer) go to blob
	// files written once, at flush; compactions then rewrite only keys and
	// value handles. Every partition appends at its own end of the key
	// space, so each flushed table overlaps them all and compactions rewrite
	// little else: with the values in them they were half of queen-dev's CPU
	// under a produce load, and separating them cut its CPU per record by a
	// quarter. Retired records leave garbage in blob files, rewritten once a
	// fifth of a file is garbage. The reference depth bounds how many blob
	// files one table's values may be spread over before a compaction
	// copies its values into new ones; at 10, L0's sublevels (one per
	// flush, up to 32) plus the levels below went past it in most
	// compactions, which then rewrote every value: a profile of queen-dev
	// under the produce benchmark put 31% of its CPU there (and snappy over
	// the copies). A record batch is read a value at a time, so locality
	// among blob files buys a fetch little; 256 is past what L0 and the
	// levels reach.
	// Blocks and blob files are compressed with pebble's fastest profile
	// (MinLZ on amd64, snappy where MinLZ has no assembly), not its
	// default snappy: the facade's envelopes (1 KiB values in base64) took
	// 8% less disk for the same CPU. No compression cost 80% more disk for
	// 4% less CPU, zstd 1/3 less disk for 3x the compression CPU (see
	// docs/performance.md, queen-dev's CPU).
	opts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionFastest })
	opts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{Enabled: true, MinimumSize: 256, MaxBlobReferenceDepth: 256,
			RewriteMinimumAge: 5 * time.Minute, TargetGarbageRatio: 0.2}
	}
	if dir == "" {
		dir = "mem"
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	return db, wal, nil
}

// engineLogger sends pebble's log lines to the broker's logger. A fatal one
// (the engine cannot go on, e.g. a failed manifest write) marks the broker
// failed, so that nothing more is acknowledged, before it panics as pebble
// requires (the handler's recovery answers 500).
type engineLogger struct {
	log  *slog.Logger
	fail func(error)
}

func (l engineLogger) Infof(format string, args ...any) {
	l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l engineLogger) Errorf(format string, args ...any) {
	l.log.Warn("pebble: " + fmt.Sprintf(format, args...))
}

func (l engineLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error("pebble: " + msg)
	if l.fail != nil {
		l.fail(errors.New(msg))
	}
	panic("pebble: " + msg)
}

// durability tracks which applied batches are known to be in the log
// (written, or fsynced with Options.FsyncAlways: "synced" below means
// whichever the mode's acknowledgement waits for). Batches are applied to
// the engine under Broker.mu (so they are numbered in the order of the
// engine's write-ahead log) and become visible to reads at once; their sync
// is waited for outside the lock, where pebble coalesces the writes and
// fsyncs of concurrent commits (group commit). A reader that may have seen
// batch n waits until n is synced, so no answer shows state a crash could
// take back; a syncing batch covers every batch before it in the log.
type durability struct {
	mu      sync.Mutex
	cond    *sync.Cond
	applied uint64 // guarded by Broker.mu, not d.mu
	synced  uint64
	failed  error // sticky: once a commit failed, nothing is acknowledged
}

func newDurability() *durability {
	d := &durability{}
	d.cond = sync.NewCond(&d.mu)
	return d
}

func (d *durability) fail(err error) {
	d.mu.Lock()
	if d.failed == nil {
		d.failed = err
	}
	d.cond.Broadcast()
	d.mu.Unlock()
}

func (d *durability) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed
}

func (d *durability) done(n uint64) {
	d.mu.Lock()
	d.synced = max(d.synced, n)
	d.cond.Broadcast()
	d.mu.Unlock()
}

// wait blocks until batch n is synced (or the store failed).
func (d *durability) wait(n uint64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.synced < n && d.failed == nil {
		d.cond.Wait()
	}
	return d.failed
}

// pending is an applied batch whose sync its request has not yet waited for.
type pending struct {
	d     *durability
	batch *pebble.Batch // nil: nothing written, wait for n only
	n     uint64
	err   error
	// reuse, when set, takes the batch back once it is synced instead of
	// closing it (batchCache).
	reuse *batchCache
}

// wait makes the request's changes (and everything it saw) durable, or
// reports why they are not. Call it outside Broker.mu.
func (p *pending) wait() error {
	if p.err != nil {
		return p.err
	}
	if p.batch == nil {
		return p.d.wait(p.n)
	}
	err := p.batch.SyncWait()
	if p.reuse != nil && err == nil {
		p.reuse.put(p.batch)
	} else {
		p.batch.Close()
	}
	p.batch = nil
	if err != nil {
		err = fmt.Errorf("store sync: %w", err)
		p.d.fail(err)
		return err
	}
	p.d.done(p.n)
	return p.d.wait(p.n) // reports a failure another request saw first
}

// apply commits batch (one request's changes: all or nothing) and makes it
// visible; the caller holds b.mu, then calls wait on the result outside it
// before acknowledging. A nil or empty batch applies nothing but still
// orders the caller after every batch applied before (its answer may rest
// on them). On success, after runs (still under b.mu) to bring the
// in-memory metadata in line.
func (b *Broker) apply(batch *pebble.Batch, after func()) *pending {
	p := &pending{d: b.dur}
	if err := b.dur.err(); err != nil {
		p.err = err
	} else if b.closed {
		p.err = errClosed
	}
	if p.err != nil || batch == nil || batch.Empty() {
		if batch != nil {
			batch.Close()
		}
		p.n = b.dur.applied
		return p
	}
	if err := b.db.ApplyNoSyncWait(batch, pebble.Sync); err != nil {
		batch.Close()
		p.err = fmt.Errorf("store commit: %w", err)
		b.dur.fail(p.err)
		return p
	}
	b.dur.applied++
	p.n, p.batch = b.dur.applied, batch
	if after != nil {
		after()
	}
	return p
}

// applyUnlock ends a request that worked under b.mu: a request that
// failed halfway (err) applies nothing; otherwise batch is applied (a nil
// or empty one, a reader's, orders the caller after what was applied
// before, as observed does). It releases b.mu, then waits for that sync,
// and returns err or the wait's.
func (b *Broker) applyUnlock(batch *pebble.Batch, err error) error {
	if err != nil {
		if batch != nil {
			batch.Close()
		}
		b.mu.Unlock()
		return err
	}
	tail := b.apply(batch, nil)
	b.mu.Unlock()
	return tail.wait()
}

// observed is what a reader waits for: everything applied so far. The
// caller holds b.mu.
func (b *Broker) observed() *pending { return b.apply(nil, nil) }

var errClosed = errors.New("store closed")

// batchCache keeps a few of the push route's engine batches, with their
// buffers, for the next pushes. A push behind the facade is 1.5–3 MB (a
// producer's request of about a thousand 1 KiB records); pebble keeps a
// closed batch's buffer for reuse only up to 1 MB, in a sync.Pool that
// every GC empties, so each push allocated its batch's buffer afresh: 40%
// of the bytes queen-dev allocated under the produce benchmark, each
// buffer fresh pages to fault in while the payloads are copied into it,
// more collections and more for the runtime's scavenger to return.
type batchCache struct {
	mu   sync.Mutex
	free []*pebble.Batch
}

const (
	// cachedBatches bounds the batches kept (about the pushes in flight
	// behind a facade: 4 shards per produce group).
	cachedBatches = 4
	// reusableBatchBytes bounds the batches given back: pebble applies a
	// batch past half a memtable as a flushable batch, which keeps the
	// buffer (the margin covers its count of per-key overhead). So at most
	// 4 buffers of about 4 MiB are kept.
	reusableBatchBytes = memTableBytes/2 - 256<<10
)

// get returns an empty batch with room for size bytes: a kept one when one
// is large enough (the others stay, for smaller pushes), else a new one.
func (c *batchCache) get(db *pebble.DB, size int) *pebble.Batch {
	c.mu.Lock()
	for i := len(c.free) - 1; i >= 0; i-- {
		if bt := c.free[i]; cap(bt.Repr()) >= size {
			c.free = append(c.free[:i], c.free[i+1:]...)
			c.mu.Unlock()
			return bt
		}
	}
	c.mu.Unlock()
	// The retention bound is ours (put), not pebble's 1 MB.
	return db.NewBatch(pebble.WithInitialSizeBytes(size), pebble.WithMaxRetainedSizeBytes(1<<30))
}

// reusable tells whether batch, about to be applied, may be given back
// with put once synced: not one pebble will apply as a flushable batch.
func reusable(batch *pebble.Batch) bool { return batch.Len() < reusableBatchBytes }

// put keeps batch, applied, synced and done with, for a later get (the
// batch with the smallest buffer is closed when more than cachedBatches
// would be kept).
func (c *batchCache) put(batch *pebble.Batch) {
	if cap(batch.Repr()) > 2*reusableBatchBytes {
		batch.Close()
		return
	}
	batch.Reset()
	c.mu.Lock()
	if len(c.free) < cachedBatches {
		c.free = append(c.free, batch)
		batch = nil
	} else if i := smallest(c.free); cap(c.free[i].Repr()) < cap(batch.Repr()) {
		c.free[i], batch = batch, c.free[i]
	}
	c.mu.Unlock()
	if batch != nil {
		batch.Close()
	}
}

// smallest is the index of the batch with the smallest buffer in bs.
func smallest(bs []*pebble.Batch) int {
	j := 0
	for i := range bs {
		if cap(bs[i].Repr()) < cap(bs[j].Repr()) {
			j = i
		}
	}
	return j
}
