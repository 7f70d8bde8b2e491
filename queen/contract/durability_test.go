package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

// ackedRecord is a push the broker acknowledged with 201.
type ackedRecord struct {
	partition string
	offset    int64
	payload   []byte
}

// kvHistory is one key's writes by its single writer: every acknowledged
// write in order, and the write in flight when the broker died (it may or
// may not have been applied).
type kvHistory struct {
	acked    []queen.KVResult
	inFlight []byte
}

// TestDurabilitySIGKILL runs concurrent push and KV load, SIGKILLs queen-dev
// in the middle of it, restarts it on the same data dir and finds every
// acknowledged record at its offset with its payload and every key at its
// last acknowledged write (or the write in flight at the kill).
func TestDurabilitySIGKILL(t *testing.T) {
	p := startDev(t, "", nil)
	c := p.client(t, "")
	const queue = "durable"
	const pushers, kvWriters, keysPerWriter = 4, 2, 8

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var (
		mu      sync.Mutex
		records []ackedRecord
		history = map[string]*kvHistory{}
		wg      sync.WaitGroup
	)
	for w := 0; w < pushers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for seq := 0; loadCtx.Err() == nil; seq++ {
				n := 1 + seq%7
				items := make([]queen.PushItem, n)
				for i := range items {
					r := envelope.Record{Key: []byte(fmt.Sprintf("w%d", w)), Value: []byte(fmt.Sprintf("w%d-s%d-i%d", w, seq, i)), Timestamp: int64(seq)}
					items[i] = queen.PushItem{Queue: queue, Partition: fmt.Sprint((w + seq) % 3), Payload: envelope.Append(nil, &r)}
				}
				res, err := c.Push(loadCtx, items)
				if err != nil {
					return // the broker is gone (or the load stopped)
				}
				mu.Lock()
				for i, r := range res {
					if r.Status != queen.StatusQueued {
						t.Errorf("push status %q", r.Status)
					}
					records = append(records, ackedRecord{items[i].Partition, *r.Offset, items[i].Payload})
				}
				mu.Unlock()
			}
		}(w)
	}
	for w := 0; w < kvWriters; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for seq := 0; loadCtx.Err() == nil; seq++ {
				// Two keys per call, so a call's atomicity is exercised too.
				k1 := queen.GroupOffsetKey(fmt.Sprintf("g%d", w), "t", int32(seq%keysPerWriter))
				k2 := queen.GroupOffsetKey(fmt.Sprintf("g%d", w), "t", int32((seq+1)%keysPerWriter+keysPerWriter))
				v := rawJSON(map[string]any{"offset": seq, "writer": w})
				mu.Lock()
				for _, k := range []string{k1, k2} {
					if history[k] == nil {
						history[k] = &kvHistory{}
					}
					history[k].inFlight = v
				}
				mu.Unlock()
				res, err := c.KV(loadCtx, []queen.KVOp{kvPut(k1, v, nil), kvPut(k2, v, nil)})
				if err != nil {
					return
				}
				mu.Lock()
				for _, r := range res {
					h := history[r.Key]
					h.acked = append(h.acked, r)
					h.inFlight = nil
				}
				mu.Unlock()
			}
		}(w)
	}

	// Let load build up, then kill mid-flight.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	p.Kill()
	stopLoad()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(records) == 0 {
		t.Fatal("no push was acknowledged before the kill")
	}
	t.Logf("acknowledged before SIGKILL: %d records, %d keys", len(records), len(history))

	if err := p.launch(); err != nil { // same data dir, fresh port
		t.Fatal(err)
	}
	c = p.client(t, "")

	// Every acknowledged record is at its offset with its payload.
	byPart := map[string]map[int64][]byte{}
	for _, r := range records {
		if byPart[r.partition] == nil {
			byPart[r.partition] = map[int64][]byte{}
		}
		if prev, dup := byPart[r.partition][r.offset]; dup && !bytes.Equal(prev, r.payload) {
			t.Fatalf("partition %s offset %d acknowledged twice with different payloads", r.partition, r.offset)
		}
		byPart[r.partition][r.offset] = r.payload
	}
	for part, want := range byPart {
		stored := map[int64][]byte{}
		for next := int64(0); ; {
			f := fetchOne(t, c, queue, part, next)
			if f.Error != "" {
				t.Fatalf("partition %s after restart: %s", part, f.Error)
			}
			for _, rec := range f.Records {
				stored[rec.Offset] = rec.Payload
				next = rec.Offset + 1
			}
			if len(f.Records) == 0 || next >= f.HighWatermark {
				break
			}
		}
		for off, payload := range want {
			got, ok := stored[off]
			if !ok {
				t.Fatalf("partition %s: acknowledged offset %d lost", part, off)
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("partition %s offset %d: payload %s, acknowledged %s", part, off, got, payload)
			}
		}
	}

	// Every key holds its last acknowledged write, or the one in flight.
	var keys []string
	for k := range history {
		keys = append(keys, k)
	}
	for i := 0; i < len(keys); i += 100 {
		end := min(i+100, len(keys))
		got := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(keys[i:end]...)}))[0]
		rows := map[string]queen.KVRow{}
		for _, r := range got.Rows {
			rows[r.Key] = r
		}
		for _, k := range keys[i:end] {
			h := history[k]
			row, live := rows[k]
			if len(h.acked) == 0 {
				if live && !jsonSame(row.Value, h.inFlight) {
					t.Fatalf("%s: never acknowledged, yet holds %s", k, row.Value)
				}
				continue
			}
			last := h.acked[len(h.acked)-1]
			switch {
			case !live:
				t.Fatalf("%s: acknowledged write (version %d) lost", k, last.Version)
			case row.Version == last.Version && jsonSame(row.Value, last.Value):
			case h.inFlight != nil && jsonSame(row.Value, h.inFlight):
			default:
				t.Fatalf("%s: holds version %d %s; last acknowledged version %d %s", k, row.Version, row.Value, last.Version, last.Value)
			}
		}
	}
}

// jsonSame compares two JSON values semantically.
func jsonSame(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
