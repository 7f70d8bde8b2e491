package dev

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/queen-mq/queen-kafka/queen"
)

// reopen closes e's broker and serves the same Dir from a new one.
func reopen(t *testing.T, dir string, opts Options) *env {
	t.Helper()
	opts.Dir = dir
	return newEnv(t, opts)
}

// snapshot is everything observable, for before/after comparisons.
func snapshot(t *testing.T, e *env) string {
	t.Helper()
	c := ctx(t)
	qs, err := e.qc.Queues(c)
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, q := range qs {
		out += fmt.Sprintf("queue %s %s %d\n", q.Name, q.ID, q.Partitions)
		for _, p := range []string{"0", "1", "Default"} {
			fr, err := e.qc.Fetch(c, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: q.Name, Partition: p, Offset: 0}}})
			if err != nil {
				t.Fatal(err)
			}
			r := fr[0]
			out += fmt.Sprintf("  %s hwm %d lso %d err %q\n", p, r.HighWatermark, r.LogStartOffset, r.Error)
			for _, rec := range r.Records {
				out += fmt.Sprintf("    %d %s %s %s\n", rec.Offset, rec.TransactionID, rec.Payload, rec.TS)
			}
		}
	}
	st, raw, _ := e.do("POST", "/api/v1/configure", "", `{"queue":"cfg"}`)
	out += fmt.Sprintf("configure %d %s\n", st, raw)
	kv, err := e.qc.KV(c, []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: "qk:", Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range kv[0].Rows {
		exp := "forever"
		if r.ExpiresAt != nil {
			exp = *r.ExpiresAt
		}
		out += fmt.Sprintf("kv %s %s %d %s %s\n", r.Key, r.Value, r.Version, exp, r.UpdatedAt)
	}
	return out
}

func populate(t *testing.T, e *env) {
	t.Helper()
	c := ctx(t)
	if _, err := e.qc.Configure(c, "cfg", map[string]any{"retentionEnabled": true, "retentionSeconds": 3600, "task": "t"}); err != nil {
		t.Fatal(err)
	}
	e.pushN("a", "0", 3)
	e.pushN("a", "1", 2)
	if _, err := e.qc.Push(c, []queen.PushItem{{Queue: "a", Partition: "0", Payload: json.RawMessage(`{"n": 1.50}`), TransactionID: "tx-1"}}); err != nil {
		t.Fatal(err)
	}
	e.pushN("gone", "0", 2)
	if _, err := e.qc.DeleteQueue(c, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.qc.KV(c, []queen.KVOp{put("qk:a", `1`), put("qk:b", `{"x":[1,2]}`), {Op: queen.OpPut, NS: queen.Namespace, Key: "qk:ttl", Value: json.RawMessage(`2`), TTLSeconds: 3600}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.qc.KV(c, []queen.KVOp{{Op: queen.OpDelete, NS: queen.Namespace, Key: "qk:a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.qc.Transaction(c, queen.TxnRequest{
		Operations: []queen.TxnOperation{{Type: "push", Items: []queen.PushItem{{Queue: "t", Partition: "0", Payload: json.RawMessage(`"txn"`)}}}},
		KV:         []queen.KVOp{put("qk:txn:x", `{"state":"committed"}`)},
	}); err != nil {
		t.Fatal(err)
	}
}

// Close and reopen: every acknowledged write is back, identical; offsets,
// ids, versions and dedup continue where they were.
func TestRestartReplaysEverything(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	e := newEnv(t, Options{Dir: dir, Now: clk.Now})
	populate(t, e)
	before := snapshot(t, e)
	seqBefore := e.b.st.kvSeq
	e.srv.Close()
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}

	e2 := reopen(t, dir, Options{Now: clk.Now})
	if e2.b.Boot.Queues == 0 || e2.b.Boot.Partitions == 0 {
		t.Errorf("boot %+v", e2.b.Boot)
	}
	if after := snapshot(t, e2); after != before {
		t.Fatalf("state differs after restart:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	res := e2.pushN("a", "0", 1)
	if *res[0].Offset != 4 {
		t.Errorf("offset after restart %d, want 4", *res[0].Offset)
	}
	dup, err := e2.qc.Push(ctx(t), []queen.PushItem{{Queue: "a", Partition: "0", Payload: json.RawMessage(`0`), TransactionID: "tx-1"}})
	if err != nil || dup[0].Status != queen.StatusDuplicate || *dup[0].Offset != 3 {
		t.Errorf("dedup lost on restart: %+v %v", dup, err)
	}
	kv, _ := e2.qc.KV(ctx(t), []queen.KVOp{put("qk:new", `1`)})
	if kv[0].Version <= seqBefore {
		t.Errorf("version %d reissued (sequence was %d)", kv[0].Version, seqBefore)
	}
}

// An acknowledged write is in the store's files at the moment of the
// answer: a copy of them taken then (as a kill -9 would leave them, the
// engine's lock included) boots with it.
func TestAckedWritesOnDiskWithoutClose(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, Options{Dir: dir})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				e.pushN(fmt.Sprintf("q%d", w), "0", 3)
				if _, err := e.qc.KV(ctx(t), []queen.KVOp{put(fmt.Sprintf("qk:%d:%d", w, i), `1`)}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	snapshot(t, e) // its configure of "cfg" creates that queue; the next one is stable
	want := snapshot(t, e)
	crash := copyDir(t, dir)
	e2 := reopen(t, crash, Options{})
	if got := snapshot(t, e2); got != want {
		t.Fatalf("crash copy differs:\nwant:\n%s\ngot:\n%s", want, got)
	}
}

// copyDir copies every file of dir into a new directory, as they are now.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		data, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, ent.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// populatedStore is a closed broker's Dir after populate, and the snapshot
// it served.
func populatedStore(t *testing.T) (dir, want string) {
	t.Helper()
	dir = t.TempDir()
	e := newEnv(t, Options{Dir: dir})
	populate(t, e)
	want = snapshot(t, e)
	e.srv.Close()
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, want
}

// newestWAL is the engine's write-ahead log file that takes new writes.
func newestWAL(t *testing.T, dir string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no write-ahead log in %s: %v", dir, err)
	}
	sort.Strings(logs)
	return logs[len(logs)-1]
}

// A crash during the engine's last log write leaves a torn tail (a record
// cut short, zeros, garbage): boot keeps everything before it, and new
// writes follow and survive the next restart.
func TestTornTailTruncated(t *testing.T) {
	cases := map[string]func([]byte) []byte{
		"short header": func(b []byte) []byte { return append(b, 7, 0, 0) },
		// A power loss after the file grew but before its blocks were written.
		"zeros":   func(b []byte) []byte { return append(b, make([]byte, 4096)...) },
		"garbage": func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xa5, 0x11, 0x3c}, 3000)...) },
		"half a record": func(b []byte) []byte {
			return append(b, b[len(b)/2:len(b)/2+len(b)/4]...)
		},
	}
	for name, tear := range cases {
		t.Run(name, func(t *testing.T) {
			dir, _ := populatedStore(t)
			// The writes of a second boot land in a log of their own, which is
			// the one torn.
			e := reopen(t, dir, Options{})
			e.pushN("torn", "0", 2)
			want := snapshot(t, e)
			crash := copyDir(t, dir) // as kill -9 leaves it: the engine not closed
			wal := newestWAL(t, crash)
			orig, err := os.ReadFile(wal)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(wal, tear(orig), 0o644); err != nil {
				t.Fatal(err)
			}
			e2 := reopen(t, crash, Options{})
			if got := snapshot(t, e2); got != want {
				t.Fatalf("after a torn tail:\nwant:\n%s\ngot:\n%s", want, got)
			}
			e2.pushN("after", "0", 2)
			want = snapshot(t, e2)
			e2.srv.Close()
			if err := e2.b.Close(); err != nil {
				t.Fatal(err)
			}
			e3 := reopen(t, crash, Options{})
			if got := snapshot(t, e3); got != want {
				t.Fatalf("writes after the torn tail lost:\nwant:\n%s\ngot:\n%s", want, got)
			}
		})
	}
}

// A store whose manifest is damaged refuses the boot, naming the
// directory, rather than starting with part of its data.
func TestCorruptStoreRefusesBoot(t *testing.T) {
	dir, _ := populatedStore(t)
	manifests, err := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("no manifest: %v", err)
	}
	for _, m := range manifests {
		if err := os.WriteFile(m, bytes.Repeat([]byte{0x5a}, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := New(Options{Dir: dir, SweepInterval: -1}); err == nil {
		b.Close()
		t.Fatal("corrupt store accepted")
	} else if !strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error must name %s on one line: %v", dir, err)
	}
}

// A data directory of the queen-dev before the engine (its wal.log) is
// refused with what to do, never silently started empty beside it.
func TestLegacyLogRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, legacyLog), []byte("old frames"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := New(Options{Dir: dir, SweepInterval: -1})
	if err == nil {
		b.Close()
		t.Fatal("a directory holding wal.log was opened")
	}
	if !strings.Contains(err.Error(), filepath.Join(dir, legacyLog)) || !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("error: %v", err)
	}
}

func TestDirLockedOnce(t *testing.T) {
	dir := t.TempDir()
	b, err := New(Options{Dir: dir, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b2, err := New(Options{Dir: dir}); err == nil {
		b2.Close()
		t.Fatal("second broker opened a locked dir")
	}
}

// After Close, writes fail with 500 instead of being acknowledged unlogged.
func TestWritesAfterCloseFail(t *testing.T) {
	dir := t.TempDir()
	b, err := New(Options{Dir: dir, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	b.Close()
	qc, _ := queen.New(queen.Config{URL: srv.URL})
	_, err = qc.Push(ctx(t), []queen.PushItem{{Queue: "q", Payload: json.RawMessage(`1`)}})
	if queen.KindOf(err) != queen.KindServer {
		t.Errorf("push after close: %v", err)
	}
	// Nor is that unlogged record shown to a reader.
	_, err = qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Partition: "Default", Offset: 0}}})
	if queen.KindOf(err) != queen.KindServer {
		t.Errorf("fetch after close: %v", err)
	}
	if b.Panics() != 0 {
		t.Errorf("%d panics", b.Panics())
	}
}

// Retention's raised log start (an emptied partition keeps its log end),
// a deleted queue's records and overwritten KV rows are as they were after
// a restart, and writes after it continue from there.
func TestRestartAfterRetentionAndDelete(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	e := newEnv(t, Options{Dir: dir, Now: clk.Now})
	populate(t, e)
	for i := 0; i < 50; i++ {
		if _, err := e.qc.KV(ctx(t), []queen.KVOp{put("qk:hot", fmt.Sprintf(`{"i":%d,"pad":"%0200d"}`, i, 0))}); err != nil {
			t.Fatal(err)
		}
		e.pushN("scratch", "0", 5)
	}
	if _, err := e.qc.DeleteQueue(ctx(t), "scratch"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.qc.Configure(ctx(t), "a", map[string]any{"retentionEnabled": true, "retentionSeconds": 1}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2e9)
	e.b.Sweep()
	want := snapshot(t, e)
	e.srv.Close()
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	e2 := reopen(t, dir, Options{Now: clk.Now})
	if got := snapshot(t, e2); got != want {
		t.Fatalf("restart changed state:\nwant:\n%s\ngot:\n%s", want, got)
	}
	res := e2.pushN("a", "0", 1)
	if *res[0].Offset != 4 {
		t.Errorf("offset after restart %d, want 4", *res[0].Offset)
	}
	// The deleted queue's rows are gone from the store, not only hidden.
	// Stored now: a/0's new record and t/0's one; a's retired records and
	// the deleted queues' are gone from the store, not only hidden.
	n := 0
	if err := e2.b.scan([]byte{kindBatch}, func(k, v []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d records stored, want 2", n)
	}
}

// failFS fails every Sync of the engine's files once armed.
type failFS struct {
	vfs.FS
	armed *atomic.Bool
}

type failFile struct {
	vfs.File
	armed *atomic.Bool
}

func (f failFile) Sync() error {
	if f.armed.Load() {
		return errors.New("injected sync failure")
	}
	return f.File.Sync()
}

func (f failFile) SyncData() error { return f.Sync() }

func (f failFile) SyncTo(length int64) (bool, error) {
	if f.armed.Load() {
		return false, errors.New("injected sync failure")
	}
	return f.File.SyncTo(length)
}

func (f failFile) Write(p []byte) (int, error) {
	if f.armed.Load() {
		return 0, errors.New("injected write failure")
	}
	return f.File.Write(p)
}

func (fs failFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, cat)
	if err != nil {
		return nil, err
	}
	return failFile{f, fs.armed}, nil
}

func (fs failFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, cat)
	if err != nil {
		return nil, err
	}
	return failFile{f, fs.armed}, nil
}

func (fs failFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, cat, opts...)
	if err != nil {
		return nil, err
	}
	return failFile{f, fs.armed}, nil
}

// A failed write to the store is sticky: that write and every later call
// answer 500 instead of acknowledging (or showing) state the disk may not
// hold.
func TestLogFailureIsSticky(t *testing.T) {
	var armed atomic.Bool
	b, err := New(Options{Dir: t.TempDir(), SweepInterval: -1, fs: failFS{vfs.Default, &armed}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	qc, _ := queen.New(queen.Config{URL: srv.URL})
	e := &env{t: t, b: b, srv: srv, qc: qc}
	e.pushN("q", "0", 1)
	armed.Store(true) // every later write or sync fails
	_, err = e.qc.Push(ctx(t), []queen.PushItem{{Queue: "q", Partition: "0", Payload: json.RawMessage(`2`)}})
	if queen.KindOf(err) != queen.KindServer {
		t.Fatalf("push with a failed log: %v", err)
	}
	armed.Store(false) // a recovered disk does not make the broker trust memory again
	_, err = e.qc.KV(ctx(t), []queen.KVOp{put("k", `1`)})
	if queen.KindOf(err) != queen.KindServer {
		t.Errorf("kv with a failed log: %v", err)
	}
	_, err = e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Partition: "0", Offset: 0}}})
	if queen.KindOf(err) != queen.KindServer {
		t.Errorf("fetch with a failed log: %v", err)
	}
	if _, err := e.qc.Configure(ctx(t), "z", nil); queen.KindOf(err) != queen.KindServer {
		t.Errorf("configure with a failed log: %v", err)
	}
	if err := b.Close(); err == nil {
		t.Error("Close must report the log failure")
	}
}
