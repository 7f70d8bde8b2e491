package dev

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/queen-mq/queen-kafka/queen"
)

// pushLoadItems is a push like the facade's behind a saturated producer: n
// records of about 1.4 KB (a 1 KiB value's envelope) to one partition,
// each with its dedup key.
func pushLoadItems(queue, part string, from, n int) []queen.PushItem {
	items := make([]queen.PushItem, n)
	for i := range items {
		payload := fmt.Sprintf(`{"k":null,"t":%d,"v":"%s"}`, from+i, strings.Repeat("eHh4", 340))
		items[i] = queen.PushItem{Queue: queue, Partition: part, Payload: json.RawMessage(payload),
			TransactionID: fmt.Sprintf("kafka:7:0:%d", from+i)}
	}
	return items
}

// A batch of the size of a push the facade sends under load (1.5–3 MB) is
// applied to the memtable, not as a flushable batch of its own (pebble's
// way with a batch past half a memtable), which would rotate the memtable
// and the log and flush both, a table and a blob file for every push (seen
// failing with 4 MiB memtables). pebble drops a flushable batch's buffer
// from the batch once applied, which is how the test tells.
func TestFacadeSizedPushStaysInMemtable(t *testing.T) {
	e := newEnv(t, Options{FsyncInterval: -1})
	batch := e.b.db.NewBatch()
	if err := batch.Set([]byte("t"), make([]byte, 3<<20), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.b.db.Apply(batch, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if batch.Len() < 3<<20 {
		t.Fatalf("a 3 MB batch was applied as a flushable batch (its buffer gone: %d bytes left)", batch.Len())
	}
	batch.Close()
	if !reusable(e.b.db.NewBatch()) {
		t.Fatal("an empty batch is not reusable")
	}
}

// Compactions cut their output by size, which pebble counts with the
// values a table references in blob files: a compaction of about 40 MB of
// records' keys makes one or two tables, not one every few MB of values
// (seen failing at pebble's default 2 MiB target: 10 tables of a few KB).
func TestCompactionTablesNotCutByValues(t *testing.T) {
	e := newEnv(t, Options{Dir: t.TempDir(), FsyncInterval: -1})
	for p := range 28 {
		if _, err := e.qc.Push(ctx(t), pushLoadItems("bulk", fmt.Sprint(p%6), p*1000, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.b.db.Compact(ctx(t), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	m := e.b.db.Metrics()
	tables := int64(0)
	for l := range m.Levels {
		tables += m.Levels[l].TablesCount
	}
	if tables > 2 {
		t.Fatalf("after a full compaction of 28 MB of records: %d tables, want at most 2\n%s", tables, m)
	}
}

// Pushes reuse engine batches (batchCache): concurrent pushes of every size
// (small, the facade's, and past half a memtable, which pebble applies as a
// flushable batch that keeps its buffer) store exactly what they sent.
func TestReusedBatchesStoreWhatWasSent(t *testing.T) {
	e := newEnv(t, Options{Dir: t.TempDir(), FsyncInterval: -1})
	sizes := []int{3, 1000, 120, 3200, 1, 2100, 40}
	const workers = 6
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			part := fmt.Sprint(w)
			from := 0
			for r := range 3 * len(sizes) {
				n := sizes[(r+w)%len(sizes)]
				items := pushLoadItems("mix", part, from, n)
				for i := range items {
					// Every record's payload of its own, so that a buffer
					// reused too early shows as another push's bytes.
					items[i].Payload = json.RawMessage(fmt.Sprintf(`{"w":%d,"o":%d,"pad":"%s"}`, w, from+i, strings.Repeat("x", 1000+(from+i)%97)))
				}
				if _, err := e.qc.Push(ctx(t), items); err != nil {
					t.Error(err)
					return
				}
				from += n
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	q := e.b.st.tenant(DefaultTenant).queues["mix"]
	for w := range workers {
		part := fmt.Sprint(w)
		hwm := q.parts[part].hwm
		ri := e.b.records(q.id, part, 0, hwm)
		n := int64(0)
		for off, rec, ok := ri.next(); ok; off, rec, ok = ri.next() {
			want := fmt.Sprintf(`{"w":%d,"o":%d,"pad":"%s"}`, w, off, strings.Repeat("x", 1000+int(off)%97))
			if !bytes.Equal(rec.payload, []byte(want)) {
				t.Fatalf("partition %s offset %d: stored %.60q…, sent %.60q…", part, off, rec.payload, want)
			}
			n++
		}
		if err := ri.close(); err != nil {
			t.Fatal(err)
		}
		if n != hwm {
			t.Fatalf("partition %s: read %d records, stored %d", part, n, hwm)
		}
	}
	e.b.pushBatches.mu.Lock()
	kept := len(e.b.pushBatches.free)
	e.b.pushBatches.mu.Unlock()
	if kept == 0 || kept > cachedBatches {
		t.Fatalf("%d batches kept, want 1..%d", kept, cachedBatches)
	}
}

// batchCache hands a kept batch out again, keeps at most cachedBatches (the
// largest), and keeps none larger than it bounds.
func TestBatchCache(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var c batchCache
	filled := func(size int) *pebble.Batch {
		bt := c.get(db, size)
		if err := bt.Set([]byte("k"), make([]byte, size-64), nil); err != nil {
			t.Fatal(err)
		}
		return bt
	}
	a := filled(200 << 10)
	c.put(a)
	if got := c.get(db, 100<<10); got != a {
		t.Fatal("a kept batch large enough was not handed out again")
	}
	if !a.Empty() {
		t.Fatal("a kept batch was handed out with its old contents")
	}
	c.put(a)
	if got := c.get(db, 300<<10); got == a {
		t.Fatal("a batch too small was handed out")
	} else {
		got.Close()
	}
	var kept []*pebble.Batch
	for i := range cachedBatches + 2 {
		kept = append(kept, filled((i+2)*128<<10))
	}
	for _, bt := range kept {
		c.put(bt)
	}
	if len(c.free) != cachedBatches {
		t.Fatalf("%d batches kept, want %d", len(c.free), cachedBatches)
	}
	for _, bt := range c.free {
		if cap(bt.Repr()) < 4*128<<10 {
			t.Fatalf("kept a batch of %d bytes while larger ones were closed", cap(bt.Repr()))
		}
	}
	huge := filled(3 * reusableBatchBytes)
	c.put(huge)
	for _, bt := range c.free {
		if bt == huge {
			t.Fatal("kept a batch past the bound")
		}
	}
}
