package dev

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/queen-mq/queen-kafka/queen"
)

// countFS counts the fsyncs (Sync, SyncData, or a SyncTo that syncs) that
// reach the write-ahead log files of the file system below the engine.
type countFS struct {
	vfs.FS
	syncs *atomic.Int64
}

type countFile struct {
	vfs.File
	syncs *atomic.Int64
}

func (f countFile) Sync() error     { f.syncs.Add(1); return f.File.Sync() }
func (f countFile) SyncData() error { f.syncs.Add(1); return f.File.SyncData() }
func (f countFile) SyncTo(n int64) (bool, error) {
	full, err := f.File.SyncTo(n)
	if full {
		f.syncs.Add(1)
	}
	return full, err
}

func (fs countFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isLog(name) {
		return f, err
	}
	return countFile{f, fs.syncs}, nil
}

func (fs countFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	return fs.wrap(name, f, err)
}

func (fs countFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	return fs.wrap(newname, f, err)
}

// FsyncAlways fsyncs the log for every acknowledgement; by default an
// acknowledgement fsyncs nothing, the background fsync syncs what was
// written, and Close leaves nothing unsynced.
func TestWALFsyncModes(t *testing.T) {
	const pushes = 20
	t.Run("always", func(t *testing.T) {
		var syncs atomic.Int64
		e := newEnv(t, Options{Dir: t.TempDir(), FsyncAlways: true, fs: countFS{vfs.Default, &syncs}})
		e.pushN("q", "0", 1) // creates the queue and partition
		before := syncs.Load()
		for range pushes {
			e.pushN("q", "0", 1)
		}
		if got := syncs.Load() - before; got < pushes {
			t.Errorf("%d log fsyncs for %d sequential acknowledged pushes, want one each", got, pushes)
		}
	})
	t.Run("written, no background fsync", func(t *testing.T) {
		var syncs atomic.Int64
		e := newEnv(t, Options{Dir: t.TempDir(), FsyncInterval: -1, fs: countFS{vfs.Default, &syncs}})
		before := syncs.Load()
		for range pushes {
			e.pushN("q", "0", 1)
		}
		if got := syncs.Load() - before; got != 0 {
			t.Errorf("%d log fsyncs for %d acknowledged pushes, want none", got, pushes)
		}
		if err := e.b.Close(); err != nil {
			t.Fatal(err)
		}
		if syncs.Load() == before {
			t.Error("Close left the log unsynced")
		}
	})
	t.Run("written, background fsync", func(t *testing.T) {
		var syncs atomic.Int64
		e := newEnv(t, Options{Dir: t.TempDir(), FsyncInterval: 10 * time.Millisecond, fs: countFS{vfs.Default, &syncs}})
		before := syncs.Load()
		e.pushN("q", "0", 1)
		deadline := time.Now().Add(10 * time.Second)
		for syncs.Load() == before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if syncs.Load() == before {
			t.Fatal("no background fsync of the written log within 10 s")
		}
		// Nothing written since: the next ticks fsync nothing.
		after := syncs.Load()
		time.Sleep(100 * time.Millisecond)
		if got := syncs.Load() - after; got != 0 {
			t.Errorf("%d background fsyncs of a log with nothing new", got)
		}
	})
}

// gateFS holds every write to the write-ahead log while its gate is shut.
type gateFS struct {
	vfs.FS
	shut *atomic.Bool
	open chan struct{} // closed to release held writes
}

type gateFile struct {
	vfs.File
	fs gateFS
}

func (f gateFile) Write(p []byte) (int, error) {
	if f.fs.shut.Load() {
		<-f.fs.open
	}
	return f.File.Write(p)
}

func (fs gateFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	if err != nil || !isLog(name) {
		return f, err
	}
	return gateFile{f, fs}, nil
}

func (fs gateFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil || !isLog(newname) {
		return f, err
	}
	return gateFile{f, fs}, nil
}

// By default an acknowledgement waits for its log record's write(2): with
// the log's writes held, a push is not answered (nor is a fetch that would
// show its records), and both are once the write goes through.
func TestAckWaitsForLogWrite(t *testing.T) {
	var shut atomic.Bool
	gate := gateFS{FS: vfs.Default, shut: &shut, open: make(chan struct{})}
	e := newEnv(t, Options{Dir: t.TempDir(), FsyncInterval: -1, fs: gate})
	e.pushN("q", "0", 1)
	var once sync.Once
	release := func() { once.Do(func() { shut.Store(false); close(gate.open) }) }
	t.Cleanup(release) // a failure must not leave the store's Close waiting on the gate
	shut.Store(true)
	pushed := make(chan error, 1)
	go func() {
		_, err := e.qc.Push(ctx(t), []queen.PushItem{{Queue: "q", Partition: "0", Payload: json.RawMessage(`2`)}})
		pushed <- err
	}()
	fetched := make(chan int64, 1)
	go func() {
		time.Sleep(50 * time.Millisecond) // after the push was applied, most likely
		fr, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Partition: "0", Offset: 0}}})
		if err != nil {
			t.Error(err)
			fetched <- -1
			return
		}
		fetched <- fr[0].HighWatermark
	}()
	sawFetch := false
	select {
	case err := <-pushed:
		t.Fatalf("push answered (%v) before its log record was written", err)
	case hwm := <-fetched:
		sawFetch = true
		if hwm > 1 {
			t.Fatalf("fetch showed high watermark %d before the record was written", hwm)
		}
	case <-time.After(300 * time.Millisecond):
	}
	release()
	if err := <-pushed; err != nil {
		t.Fatalf("push after the write: %v", err)
	}
	if !sawFetch {
		<-fetched
	}
}
