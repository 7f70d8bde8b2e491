package dev

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/queen-mq/queen-kafka/queen"
)

// randomBatch is n records with random ids and payloads (some empty).
func randomBatch(rng *rand.Rand, n int) []record {
	recs := make([]record, n)
	for i := range recs {
		r := &recs[i]
		r.msgID = fmt.Sprintf("m-%d", rng.Uint64())
		switch rng.IntN(4) {
		case 0:
			r.txID = strings.Repeat("t", rng.IntN(300))
		case 1, 2: // numbered ids, mostly counting up: runs
			r.txID = "kafka:7:0:" + strconv.Itoa(i+rng.IntN(2)*rng.IntN(3))
		}
		r.payload = make([]byte, rng.IntN(2000))
		for j := range r.payload {
			r.payload[j] = byte(rng.Uint32())
		}
	}
	return recs
}

func sameRecords(t *testing.T, got []recordView, ts int64, want []record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := &got[i], &want[i]
		if g.ts != ts || string(g.msgID) != w.msgID || string(g.txID) != w.txID || !bytes.Equal(g.payload, w.payload) {
			t.Fatalf("record %d: %+v, want %+v at %d", i, g, w, ts)
		}
	}
}

// The batch codec round-trips any records; batchValueSize is exact (push
// encodes into a slot of that size); every truncation and every single
// flipped byte of a value is refused, never read as other records.
func TestBatchValueProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 3))
	for iter := range 200 {
		n := rng.IntN(40)
		if iter == 0 {
			n = 0
		}
		recs := randomBatch(rng, n)
		ts := rng.Int64() - rng.Int64()
		v := appendBatchValue([]byte("prefix"), ts, recs)[len("prefix"):]
		if len(v) != batchValueSize(ts, recs) {
			t.Fatalf("value of %d bytes, sized %d", len(v), batchValueSize(ts, recs))
		}
		got, gotTS, err := decodeBatch(nil, v)
		if err != nil || gotTS != ts {
			t.Fatalf("decode: %v (ts %d, want %d)", err, gotTS, ts)
		}
		sameRecords(t, got, ts, recs)
		// A record alone (as a dead letter embeds it) round-trips too.
		for i := range got {
			one, err := decodeRecord(appendRecordValue(nil, &got[i]))
			if err != nil {
				t.Fatal(err)
			}
			sameRecords(t, []recordView{one}, ts, recs[i:i+1])
		}
		for cut := range len(v) {
			if _, _, err := decodeBatch(nil, v[:cut]); err == nil {
				t.Fatalf("value cut to %d of %d bytes accepted", cut, len(v))
			}
		}
		for range 50 {
			bad := bytes.Clone(v)
			bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
			if _, _, err := decodeBatch(nil, bad); err == nil {
				t.Fatalf("damaged value accepted")
			}
		}
		age := appendBatchAge(nil, ts, 1000, recs)
		entries, ageTS, err := decodeBatchAge(nil, age, 1000)
		if err != nil || ageTS != ts {
			t.Fatalf("batch age: %v", err)
		}
		k := 0
		dedupRuns(recs, func(i, j int, stem string, num int64, single bool) {
			want := dedupAged{off: 1000 + int64(i), txID: recs[i].txID}
			if !single {
				want = dedupAged{off: 1000 + int64(i), txID: stem, run: true, num: num}
			}
			if k >= len(entries) || entries[k] != want {
				t.Fatalf("age entry %d: %+v, want %+v", k, entries, want)
			}
			k++
		})
		if k != len(entries) {
			t.Fatalf("%d age entries, want %d", len(entries), k)
		}
	}
}

// FuzzBatchValue: any bytes decode to records or an error, never a panic;
// what decodes re-encodes to the same bytes.
func FuzzBatchValue(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	f.Add(appendBatchValue(nil, 7, randomBatch(rng, 3)))
	f.Add(appendBatchValue(nil, 0, nil))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7})
	f.Fuzz(func(t *testing.T, v []byte) {
		got, ts, err := decodeBatch(nil, v)
		if err == nil {
			recs := make([]record, len(got))
			for i, r := range got {
				recs[i] = record{msgID: string(r.msgID), txID: string(r.txID), payload: r.payload}
			}
			if again := appendBatchValue(nil, ts, recs); !bytes.Equal(again, v) {
				t.Fatalf("decoded value re-encodes differently")
			}
		}
		_, _, _ = decodeBatchAge(nil, v, 5)
	})
}

// Reading from every offset of a partition written in batches of many
// sizes finds each record where it was stored: the first of a batch, its
// middle and its last, up to any high watermark.
func TestRecordsFromAnyOffset(t *testing.T) {
	e := newEnv(t, Options{})
	total := 0
	var want []string
	for _, n := range []int{1, 5, 1, 17, 3} {
		res := e.pushN("q", "p", n)
		for _, r := range res {
			want = append(want, r.TransactionID)
		}
		total += n
	}
	e.pushN("q", "other", 4) // a neighbouring partition's batches are never read
	e.b.mu.Lock()
	q := e.b.st.tenant(DefaultTenant).queues["q"]
	qid := q.id
	e.b.mu.Unlock()
	for from := range total + 1 {
		for hwm := from; hwm <= total; hwm += 7 {
			ri := e.b.records(qid, "p", int64(from), int64(hwm))
			next := int64(from)
			for off, rec, ok := ri.next(); ok; off, rec, ok = ri.next() {
				if off != next || string(rec.transactionID()) != want[off] {
					t.Fatalf("from %d to %d: offset %d (%s), want %d (%s)", from, hwm, off, rec.transactionID(), next, want[next])
				}
				next++
			}
			if err := ri.close(); err != nil || next != int64(hwm) {
				t.Fatalf("from %d to %d: ended at %d: %v", from, hwm, next, err)
			}
		}
	}
}

// A store written with one key per record (the layout before batches) is
// refused with what to do, never served without its records.
func TestOldRecordLayoutRefused(t *testing.T) {
	for _, kind := range []byte{kindOldRecord, kindOldAge} {
		dir := t.TempDir()
		db, _, err := openEngine(dir, 0, nil, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set(append(keyPrefix(kind, "qid", "0"), 0, 0, 0, 0, 0, 0, 0, 0), []byte("v"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := New(Options{Dir: dir, SweepInterval: -1})
		if err == nil {
			b.Close()
			t.Fatalf("a store holding kind %c keys was opened", kind)
		}
		if !errors.Is(err, errOldLayout) || !strings.Contains(err.Error(), dir) {
			t.Errorf("error: %v", err)
		}
	}
}

// The dedup sweep forgets a batch's entries through its one age key: a
// transactionId is a duplicate inside the window and stored anew after it.
func TestDedupAgedByBatch(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	if _, err := e.qc.Configure(ctx(t), "q", map[string]any{"dedupWindowSeconds": 10}); err != nil {
		t.Fatal(err)
	}
	e.pushKeyed("q", "0", "a", "b", "c")
	if got := e.pushKeyed("q", "0", "b"); got[0] != "duplicate" {
		t.Fatalf("inside the window: %v", got)
	}
	clk.Advance(11 * time.Second)
	e.b.Sweep()
	n := 0
	if err := e.b.scan([]byte{kindDedup}, func(k, v []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d dedup entries left after the window", n)
	}
	if err := e.b.scan([]byte{kindBatchAge}, func(k, v []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("%d batch-age keys left after the window: %v", n, err)
	}
	if got := e.pushKeyed("q", "0", "b"); got[0] != "queued" {
		t.Fatalf("after the window: %v", got)
	}
}

// pushKeyed pushes one record per transactionId and returns each status.
func (e *env) pushKeyed(queue, part string, txIDs ...string) []string {
	e.t.Helper()
	items := make([]queen.PushItem, len(txIDs))
	for i, tx := range txIDs {
		items[i] = queen.PushItem{Queue: queue, Partition: part, Payload: json.RawMessage(`1`), TransactionID: tx}
	}
	res, err := e.qc.Push(ctx(e.t), items)
	if err != nil {
		e.t.Fatalf("push: %v", err)
	}
	out := make([]string, len(res))
	for i := range res {
		out[i] = res[i].Status
	}
	return out
}

// The dedup index against a model (a map of transactionId to its live
// entry): random pushes of numbered ids (runs, gaps, repeats, ids stored
// again after the window), other ids, ids repeated within a push, with
// the clock moving and sweeps in between. Every answer (status, offset,
// message id) is the model's.
func TestDedupMatchesModel(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { dedupModelRun(t, seed) })
	}
}

func dedupModelRun(t *testing.T, seed uint64) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	const window = 10 * time.Second
	if _, err := e.qc.Configure(ctx(t), "q", map[string]any{"dedupWindowSeconds": 10}); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		off   int64
		ts    time.Time
		msgID string
	}
	model := map[string]entry{}
	rng := rand.New(rand.NewPCG(24, seed))
	var hwm int64
	ids := func() string {
		switch rng.IntN(6) {
		case 0:
			return []string{"a", "b", "007", "x9", "kafka:1:0:"}[rng.IntN(5)]
		case 1:
			return "kafka:2:0:" + strconv.Itoa(rng.IntN(40))
		}
		return "kafka:1:0:" + strconv.Itoa(rng.IntN(60))
	}
	for round := range 150 {
		n := 1 + rng.IntN(12)
		start := rng.IntN(60)
		items := make([]queen.PushItem, n)
		for i := range items {
			tx := ids()
			if rng.IntN(3) > 0 { // mostly a counting run, as a producer's batch
				tx = "kafka:1:0:" + strconv.Itoa(start+i)
			}
			items[i] = queen.PushItem{Queue: "q", Partition: "0", Payload: json.RawMessage(`1`), TransactionID: tx}
		}
		res, err := e.qc.Push(ctx(t), items)
		if err != nil {
			t.Fatal(err)
		}
		now := clk.Now()
		inReq := map[string]entry{}
		for i, it := range items {
			r := res[i]
			want, dup := inReq[it.TransactionID]
			if !dup {
				if m, ok := model[it.TransactionID]; ok && now.Sub(m.ts) < window {
					want, dup = m, true
				}
			}
			if dup {
				if r.Status != "duplicate" || *r.Offset != want.off || r.MessageID != want.msgID {
					t.Fatalf("round %d item %d (%s): %+v, want duplicate of %+v", round, i, it.TransactionID, r, want)
				}
				continue
			}
			if r.Status != "queued" || *r.Offset != hwm {
				t.Fatalf("round %d item %d (%s): %s at %d, want queued at %d", round, i, it.TransactionID, r.Status, *r.Offset, hwm)
			}
			ent := entry{off: hwm, ts: now, msgID: r.MessageID}
			model[it.TransactionID], inReq[it.TransactionID] = ent, ent
			hwm++
		}
		checkRunTops(t, e.b)
		clk.Advance(time.Duration(rng.IntN(4000)) * time.Millisecond)
		if rng.IntN(4) == 0 {
			e.b.Sweep()
			checkRunTops(t, e.b)
		}
	}
}

// checkRunTops fails t unless every partition's runTops names its stem's
// last stored run (or no run, when none is stored), as the store says.
func checkRunTops(t *testing.T, b *Broker) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: []byte{kindDedupRun}, UpperBound: []byte{kindDedupRun + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for _, tn := range b.st.tenants {
		for _, q := range tn.queues {
			for _, p := range q.parts {
				for stem, top := range p.runTops {
					want := runTop{first: math.MinInt64}
					key := appendKeyRun(nil, q.id, p.name, stem, math.MaxInt64)
					if it.SeekLT(key) && len(it.Key()) == len(key) && bytes.Equal(it.Key()[:len(key)-8], key[:len(key)-8]) {
						n, err := runCount(it.Value())
						if err != nil {
							t.Fatal(err)
						}
						want = runTop{first: offsetOf(it.Key()), count: n}
					}
					if top != want {
						t.Fatalf("partition %s, stem %q: runTops says %+v, the store's last run is %+v", p.name, stem, top, want)
					}
				}
			}
		}
	}
}

// A push larger than maxBatchValue is stored as several values, each
// filed under its first offset, and reads from any offset cross them.
func TestLargePushSplitsValues(t *testing.T) {
	e := newEnv(t, Options{})
	const n = 40
	pad := strings.Repeat("p", 5000)
	items := make([]queen.PushItem, n)
	for i := range items {
		items[i] = queen.PushItem{Queue: "q", Partition: "0", Payload: json.RawMessage(`"` + pad + strconv.Itoa(i) + `"`)}
	}
	if _, err := e.qc.Push(ctx(t), items); err != nil {
		t.Fatal(err)
	}
	keys := 0
	if err := e.b.scan([]byte{kindBatch}, func(k, v []byte) error {
		keys++
		if len(v) > maxBatchValue+8<<10 {
			t.Errorf("value of %d bytes", len(v))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if keys < 3 {
		t.Fatalf("%d values for %d bytes of records", keys, n*5000)
	}
	e.b.mu.Lock()
	qid := e.b.st.tenant(DefaultTenant).queues["q"].id
	e.b.mu.Unlock()
	for from := range n {
		ri := e.b.records(qid, "0", int64(from), n)
		next := int64(from)
		for off, rec, ok := ri.next(); ok; off, rec, ok = ri.next() {
			if off != next || string(rec.payload) != `"`+pad+strconv.Itoa(int(off))+`"` {
				t.Fatalf("from %d: offset %d, want %d", from, off, next)
			}
			next++
		}
		if err := ri.close(); err != nil || next != n {
			t.Fatalf("from %d: ended at %d: %v", from, next, err)
		}
	}
}

// seekRunEntry is dedupReader.get of a numbered id as one SeekLT of its
// own: the run with the greatest first number not above the id's governs.
func seekRunEntry(r pebble.Reader, qid, part, txID string) (dedupEntry, bool, error) {
	stem, num, _ := splitSeq(txID)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{kindDedupRun}, UpperBound: []byte{kindDedupRun + 1}})
	if err != nil {
		return dedupEntry{}, false, err
	}
	defer it.Close()
	key := appendKeyRun(nil, qid, part, stem, num+1)
	if !it.SeekLT(key) {
		return dedupEntry{}, false, it.Error()
	}
	k := it.Key()
	if len(k) != len(key) || !bytes.Equal(k[:len(key)-8], key[:len(key)-8]) {
		return dedupEntry{}, false, nil
	}
	return runEntry(it.Value(), num-offsetOf(k))
}

// dedupReader's span (one seek per stem and stretch of numbers) answers
// every lookup as a seek of its own (seekRunEntry) does: random stored runs (gaps,
// repeats, runs stored again over older ones after the window), looked up
// ascending, descending and at random, against a fresh reader per lookup.
func TestDedupSpanMatchesSeek(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			clk := newFakeClock()
			e := newEnv(t, Options{Now: clk.Now})
			if _, err := e.qc.Configure(ctx(t), "q", map[string]any{"dedupWindowSeconds": 1}); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(77, seed))
			for range 60 {
				start, n := rng.IntN(200), 1+rng.IntN(30)
				stem := []string{"kafka:1:0:", "kafka:2:0:"}[rng.IntN(2)]
				ids := make([]string, n)
				for i := range ids {
					ids[i] = stem + strconv.Itoa(start+i)
				}
				e.pushKeyed("q", strconv.Itoa(rng.IntN(2)), ids...)
				checkRunTops(t, e.b)
				clk.Advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
			}
			e.b.mu.Lock()
			defer e.b.mu.Unlock()
			q := e.b.st.tenant(DefaultTenant).queues["q"]
			qid := q.id
			type lookup struct {
				part, id string
			}
			var grouped, interleaved []lookup
			for _, part := range []string{"0", "1"} {
				for _, stem := range []string{"kafka:1:0:", "kafka:2:0:"} {
					for n := range 240 {
						grouped = append(grouped, lookup{part, stem + strconv.Itoa(n)})
					}
				}
			}
			for n := range 240 {
				for _, part := range []string{"0", "1"} {
					for _, stem := range []string{"kafka:1:0:", "kafka:2:0:"} {
						interleaved = append(interleaved, lookup{part, stem + strconv.Itoa(n)})
					}
				}
			}
			backward, shuffled := slices.Clone(grouped), slices.Clone(grouped)
			slices.Reverse(backward)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			found := 0
			// Each order on the partitions as the pushes left them (runTops
			// filled by the writes and the lookups before), and on blank ones.
			blank := map[string]*partition{"0": {name: "0"}, "1": {name: "1"}}
			for _, order := range [][]lookup{grouped, interleaved, backward, shuffled, grouped, shuffled} {
				span := dedupReader{r: e.b.db}
				for _, l := range order {
					p := q.parts[l.part]
					if rng.IntN(2) == 0 {
						p = blank[l.part]
					}
					got, gotOK, err := span.get(p, qid, l.part, l.id)
					want, wantOK, werr := seekRunEntry(e.b.db, qid, l.part, l.id)
					if err != nil || werr != nil || got != want || gotOK != wantOK {
						t.Fatalf("%s/%s: span %+v %v %v, seek %+v %v %v", l.part, l.id, got, gotOK, err, want, wantOK, werr)
					}
					if gotOK {
						found++
					}
				}
				span.close()
			}
			if found == 0 {
				t.Fatal("no lookup found a stored entry")
			}
		})
	}
}
