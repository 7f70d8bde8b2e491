package dev

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultFsyncInterval is how often the write-ahead log is fsynced in the
// background when acknowledgements do not wait for it (QUEEN_DEV_FSYNC's
// default), like PostgreSQL's wal_writer_delay with synchronous_commit off.
const DefaultFsyncInterval = time.Second

// writtenWAL is the file system of the store when an acknowledgement waits
// for its log record to be written, not fsynced. The engine still commits
// every request's batch with pebble.Sync, so its group-committing log
// writer writes the record (one write(2) for every batch queued since the
// last) and then calls Sync on the log file before it releases the batch's
// waiters (record.LogWriter.flushPending); on the log files of this file
// system that Sync returns at once, so a waiter is released once the write
// returned: the record is in the kernel's page cache and survives a kill -9
// of the process, not an OS crash. Everything else the engine writes
// (sstables, blob files, the manifest, directories) is fsynced as pebble
// asks. A log file is fsynced for real when it is closed (pebble closes the
// previous log before it creates the next, so that an OS crash can leave
// an unclean tail in the newest log only) and by syncDue, which the broker
// calls every FsyncInterval.
type writtenWAL struct {
	vfs.FS
	mu   sync.Mutex
	logs map[*walFile]struct{}
}

func newWrittenWAL(fs vfs.FS) *writtenWAL {
	return &writtenWAL{FS: fs, logs: map[*walFile]struct{}{}}
}

// isLog is pebble's name for a write-ahead log file (000123.log).
func isLog(name string) bool { return strings.HasSuffix(name, ".log") }

func (w *writtenWAL) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.Create(name, cat)
	if err != nil || !isLog(name) {
		return f, err
	}
	return w.track(f), nil
}

func (w *writtenWAL) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil || !isLog(newname) {
		return f, err
	}
	return w.track(f), nil
}

func (w *writtenWAL) track(f vfs.File) *walFile {
	lf := &walFile{File: f, fs: w}
	w.mu.Lock()
	w.logs[lf] = struct{}{}
	w.mu.Unlock()
	return lf
}

// syncDue fsyncs every open log file written since its last fsync.
func (w *writtenWAL) syncDue() error {
	w.mu.Lock()
	logs := make([]*walFile, 0, len(w.logs))
	for f := range w.logs {
		logs = append(logs, f)
	}
	w.mu.Unlock()
	var errs []error
	for _, f := range logs {
		errs = append(errs, f.syncDue())
	}
	return errors.Join(errs...)
}

// walFile is a log file of writtenWAL: the log writer's syncs return at
// once; Close and syncDue fsync.
type walFile struct {
	vfs.File
	fs *writtenWAL

	dirty  atomic.Bool // written since the last real fsync
	mu     sync.Mutex  // orders syncDue against Close
	closed bool
}

func (f *walFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if n > 0 {
		f.dirty.Store(true)
	}
	return n, err
}

// Sync, SyncData and SyncTo are the log writer's: the record is written.
func (f *walFile) Sync() error                { return nil }
func (f *walFile) SyncData() error            { return nil }
func (f *walFile) SyncTo(int64) (bool, error) { return false, nil }

func (f *walFile) syncDue() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || !f.dirty.Swap(false) {
		return nil
	}
	if err := f.File.SyncData(); err != nil {
		f.dirty.Store(true)
		return err
	}
	return nil
}

// Close fsyncs the log before closing it: pebble's next log starts only
// after this one is closed, and an older log with an unclean tail is
// corruption to its replay.
func (f *walFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fs.mu.Lock()
	delete(f.fs.logs, f)
	f.fs.mu.Unlock()
	f.closed = true
	var err error
	if f.dirty.Swap(false) {
		err = f.File.SyncData()
	}
	return errors.Join(err, f.File.Close())
}

// walSyncLoop fsyncs the log every interval until stop is closed. A failed
// fsync is sticky like a failed commit: what was acknowledged may not
// reach the disk, so nothing more is acknowledged.
func (b *Broker) walSyncLoop(w *writtenWAL, interval time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := w.syncDue(); err != nil {
				b.log.Error("queen-dev: fsync of the write-ahead log failed; acknowledging nothing more", "err", err)
				b.dur.fail(err)
				return
			}
		}
	}
}
