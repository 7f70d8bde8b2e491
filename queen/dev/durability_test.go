package dev

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

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
	if e2.b.Replay.Frames == 0 || e2.b.Replay.TornBytes != 0 {
		t.Errorf("replay %+v", e2.b.Replay)
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

// An acknowledged write is in the log file at the moment of the answer:
// a copy of the file taken then (as a kill -9 would leave it) replays it.
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
	crash := t.TempDir()
	data, err := os.ReadFile(filepath.Join(dir, walName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(crash, walName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	e2 := reopen(t, crash, Options{})
	if got := snapshot(t, e2); got != want {
		t.Fatalf("crash copy differs:\nwant:\n%s\ngot:\n%s", want, got)
	}
}

// populatedLog is a closed broker's Dir after populate, and the snapshot it
// served.
func populatedLog(t *testing.T) (dir, want string) {
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

// A tail that holds no intact frame is cut whatever it holds.
func TestTornTailTruncated(t *testing.T) {
	dir, want := populatedLog(t)
	path := filepath.Join(dir, walName)
	orig, _ := os.ReadFile(path)
	good := int64(len(orig))
	// The largest frame, so that a copy's prefix holds op headers.
	offs := append(frameOffsets(t, orig), good)
	var big []byte
	for i := range offs[1:] {
		if f := orig[offs[i]:offs[i+1]]; len(f) > len(big) {
			big = f
		}
	}

	cases := map[string]func([]byte) []byte{
		"short header": func(b []byte) []byte { return append(b, 7, 0, 0) },
		"short body": func(b []byte) []byte {
			h := make([]byte, frameHeader)
			binary.LittleEndian.PutUint32(h, 100)
			return append(append(b, h...), make([]byte, 40)...)
		},
		"bad crc": func(b []byte) []byte {
			body := []byte{1, kindKVSeq, 2}
			h := make([]byte, frameHeader)
			binary.LittleEndian.PutUint32(h, uint32(len(body)))
			binary.LittleEndian.PutUint32(h[4:], 12345)
			return append(append(b, h...), body...)
		},
		"huge length": func(b []byte) []byte { return append(b, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0) },
		// A power loss after the file grew but before its blocks were written.
		"zeros":             func(b []byte) []byte { return append(b, make([]byte, 4096)...) },
		"real frame prefix": func(b []byte) []byte { return append(b, big[:len(big)-1]...) },
		"real frame, bad crc": func(b []byte) []byte {
			b = append(b, big...)
			b[len(b)-len(big)+4] ^= 1
			return b
		},
	}
	for name, tear := range cases {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, tear(append([]byte(nil), orig...)), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := Options{Dir: dir, SweepInterval: -1}
			b, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if b.Replay.TornBytes == 0 || b.Replay.Bytes != good {
				t.Errorf("replay %+v, want %d good bytes and a torn tail", b.Replay, good)
			}
			b.Close()
			st, _ := os.Stat(path)
			if st.Size() != good {
				t.Errorf("file %d bytes after truncation, want %d", st.Size(), good)
			}
		})
	}
	e2 := reopen(t, dir, Options{})
	if got := snapshot(t, e2); got != want {
		t.Fatalf("after torn tails:\nwant:\n%s\ngot:\n%s", want, got)
	}
	// New writes follow the last good frame and replay too.
	e2.pushN("after", "0", 2)
	want = snapshot(t, e2)
	e2.srv.Close()
	e2.b.Close()
	e3 := reopen(t, dir, Options{})
	if got := snapshot(t, e3); got != want {
		t.Fatalf("writes after truncation lost:\nwant:\n%s\ngot:\n%s", want, got)
	}
}

// A CRC-valid frame that does not decode is corruption: boot refuses it.
func TestCorruptFrameRefusesBoot(t *testing.T) {
	dir := t.TempDir()
	body := []byte{1, 99}
	h := make([]byte, frameHeader)
	binary.LittleEndian.PutUint32(h, uint32(len(body)))
	binary.LittleEndian.PutUint32(h[4:], crc32c(body))
	if err := os.WriteFile(filepath.Join(dir, walName), append(h, body...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Dir: dir}); err == nil {
		t.Fatal("corrupt log accepted")
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
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crcTable) }

// A log mostly made of dead bytes is rewritten at boot; the state it
// rebuilds is identical, and writes after it replay too.
func TestCompactionOnBoot(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	e := newEnv(t, Options{Dir: dir, Now: clk.Now})
	populate(t, e)
	for i := 0; i < 50; i++ { // dead bytes: overwritten rows and a deleted queue
		if _, err := e.qc.KV(ctx(t), []queen.KVOp{put("qk:hot", fmt.Sprintf(`{"i":%d,"pad":"%0200d"}`, i, 0))}); err != nil {
			t.Fatal(err)
		}
		e.pushN("scratch", "0", 5)
	}
	if _, err := e.qc.DeleteQueue(ctx(t), "scratch"); err != nil {
		t.Fatal(err)
	}
	// Retention empties a partition: its log end must survive compaction.
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
	st, _ := os.Stat(filepath.Join(dir, walName))

	old := compactMinBytes
	compactMinBytes = 0
	t.Cleanup(func() { compactMinBytes = old })
	e2 := reopen(t, dir, Options{Now: clk.Now})
	if e2.b.Replay.Compacted == 0 || e2.b.Replay.Compacted >= st.Size() {
		t.Fatalf("not compacted: %+v (log was %d bytes)", e2.b.Replay, st.Size())
	}
	if got := snapshot(t, e2); got != want {
		t.Fatalf("compaction changed state:\nwant:\n%s\ngot:\n%s", want, got)
	}
	res := e2.pushN("a", "0", 1)
	if *res[0].Offset != 4 {
		t.Errorf("offset after compaction %d, want 4", *res[0].Offset)
	}
	want = snapshot(t, e2)
	e2.srv.Close()
	if err := e2.b.Close(); err != nil {
		t.Fatal(err)
	}
	e3 := reopen(t, dir, Options{Now: clk.Now})
	if got := snapshot(t, e3); got != want {
		t.Fatalf("writes after compaction:\nwant:\n%s\ngot:\n%s", want, got)
	}
}

// A failed log write is sticky: that write and every later call answer 500
// instead of acknowledging (or showing) state the log does not hold.
func TestLogFailureIsSticky(t *testing.T) {
	b, err := New(Options{Dir: t.TempDir(), SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	qc, _ := queen.New(queen.Config{URL: srv.URL})
	e := &env{t: t, b: b, srv: srv, qc: qc}
	e.pushN("q", "0", 1)
	e.b.wal.f.Close() // every later write or sync fails
	_, err = e.qc.Push(ctx(t), []queen.PushItem{{Queue: "q", Partition: "0", Payload: json.RawMessage(`2`)}})
	if queen.KindOf(err) != queen.KindServer {
		t.Fatalf("push with a failed log: %v", err)
	}
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

// frameOffsets walks a log's frame headers: the start of every frame, and
// the end of the last one.
func frameOffsets(t *testing.T, data []byte) []int64 {
	t.Helper()
	var offs []int64
	for at := int64(0); at < int64(len(data)); {
		offs = append(offs, at)
		at += frameHeader + int64(binary.LittleEndian.Uint32(data[at:]))
	}
	return offs
}

// Damage anywhere but the tail refuses the boot, naming the file and the
// offset, and leaves the log untouched; nothing acknowledged after the
// damage is silently dropped.
func TestMidLogDamageRefusesBoot(t *testing.T) {
	dir, want := populatedLog(t)
	path := filepath.Join(dir, walName)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	offs := frameOffsets(t, orig)
	if len(offs) < 4 {
		t.Fatalf("%d frames: too few to damage one in the middle", len(offs))
	}
	k := offs[len(offs)/2]
	n := binary.LittleEndian.Uint32(orig[k:])
	setLen := func(v uint32) func([]byte) { return func(b []byte) { binary.LittleEndian.PutUint32(b[k:], v) } }
	cases := map[string]func([]byte){
		"flipped body byte":  func(b []byte) { b[k+frameHeader+int64(n)/2] ^= 0x40 },
		"flipped crc":        func(b []byte) { b[k+4] ^= 1 },
		"length shorter":     setLen(n - 1),
		"length longer":      setLen(n + 5),
		"length past end":    setLen(uint32(len(orig))),
		"length over limit":  setLen(0xfffffff0),
		"zeroed header":      func(b []byte) { copy(b[k:], make([]byte, frameHeader)) },
		"zeroed first frame": func(b []byte) { copy(b, make([]byte, frameHeader+3)) },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			bad := append([]byte(nil), orig...)
			damage(bad)
			at := k
			if name == "zeroed first frame" {
				at = 0
			}
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := New(Options{Dir: dir, SweepInterval: -1})
			if err == nil {
				b.Close()
				t.Fatalf("damaged log accepted: replay %+v", b.Replay)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("frame at byte %d ", at)) ||
				strings.Contains(msg, "\n") {
				t.Errorf("error must name %s and byte %d on one line: %v", path, at, err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
				t.Errorf("refused log was modified (%d bytes, was %d)", len(got), len(bad))
			}
		})
	}
	// What follows the damage cannot be checked within the budget: refused,
	// never cut.
	t.Run("scan budget spent", func(t *testing.T) {
		old := scanBudget
		scanBudget = 0
		t.Cleanup(func() { scanBudget = old })
		bad := append([]byte(nil), orig...)
		bad[k+4] ^= 1
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := New(Options{Dir: dir, SweepInterval: -1})
		if err == nil {
			b.Close()
			t.Fatal("unchecked tail accepted")
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("frame at byte %d ", k)) || !strings.Contains(err.Error(), "could not be checked") {
			t.Errorf("error: %v", err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
			t.Error("refused log was modified")
		}
	})
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	e2 := reopen(t, dir, Options{})
	if got := snapshot(t, e2); got != want {
		t.Fatalf("after restoring the log:\nwant:\n%s\ngot:\n%s", want, got)
	}
}
