package contract

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// Exactly at each KV ceiling is accepted: a 65 536-byte serialized value, a
// 512-byte key, 1 024 keys in one call.
func TestKVLimitsInclusive(t *testing.T) {
	c := shared.client(t, "")
	key := "qk:" + uniq("lim") + ":"
	key += strings.Repeat("k", 512-len(key))
	value := strings.Repeat("v", 65536-2) // + 2 quotes = 65 536 serialized bytes
	r := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(key, value, nil)}))[0]
	if !r.Applied {
		t.Fatalf("512-byte key with a 64 KiB value: %+v", r)
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("qk:%d", i)
	}
	keys[0] = key
	g := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(keys...)}))[0]
	if len(g.Rows) != 1 || len(g.Rows[0].Value) != 65536 {
		t.Fatalf("1024-key getMany: %d rows", len(g.Rows))
	}
}

// A transactionId stored longer ago than dedupWindowSeconds is stored again.
func TestPushDedupWindowExpires(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("window")
	must[*queen.ConfigureResult](t)(c.Configure(ctx, q, map[string]any{"dedupWindowSeconds": 1}))
	item := []queen.PushItem{{Queue: q, Partition: "0", Payload: rawJSON(1), TransactionID: "w"}}
	if r := must[[]queen.PushResult](t)(c.Push(ctx, item))[0]; r.Status != queen.StatusQueued {
		t.Fatalf("%+v", r)
	}
	if r := must[[]queen.PushResult](t)(c.Push(ctx, item))[0]; r.Status != queen.StatusDuplicate || *r.Offset != 0 {
		t.Fatalf("inside the window: %+v", r)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		time.Sleep(300 * time.Millisecond)
		r := must[[]queen.PushResult](t)(c.Push(ctx, item))[0]
		if r.Status == queen.StatusQueued {
			if *r.Offset != 1 {
				t.Fatalf("stored again at %d, want 1", *r.Offset)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a 1 s dedup window still holds after 5 s: %+v", r)
		}
	}
}

// Transactional records follow §5's offset rules: contiguous per partition
// in item order, and never sharing an offset with concurrent plain pushes.
func TestTransactionAndPushShareOffsets(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("mixed")
	const rounds = 15
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			items := make([]queen.PushItem, 3)
			for j := range items {
				items[j] = queen.PushItem{Queue: q, Partition: "0", Payload: rawJSON(fmt.Sprintf("t%d-%d", i, j))}
			}
			if _, err := c.Transaction(ctx, queen.TxnRequest{Operations: []queen.TxnOperation{{Type: "push", Items: items}}}); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			items := make([]queen.PushItem, 2)
			for j := range items {
				items[j] = queen.PushItem{Queue: q, Partition: "0", Payload: rawJSON(fmt.Sprintf("p%d-%d", i, j))}
			}
			if _, err := c.Push(ctx, items); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	f := fetchOne(t, c, q, "0", 0)
	if f.HighWatermark != rounds*5 || len(f.Records) != rounds*5 {
		t.Fatalf("hwm %d, %d records; want %d", f.HighWatermark, len(f.Records), rounds*5)
	}
	// Each request's items sit at contiguous offsets, in item order.
	pos := map[string]int64{}
	var payloads []string
	for _, r := range f.Records {
		pos[string(r.Payload)] = r.Offset
		payloads = append(payloads, string(r.Payload))
	}
	for i := 0; i < rounds; i++ {
		for _, tag := range []string{"t", "p"} {
			n := map[string]int{"t": 3, "p": 2}[tag]
			base := pos[fmt.Sprintf(`"%s%d-0"`, tag, i)]
			for j := 1; j < n; j++ {
				if pos[fmt.Sprintf(`"%s%d-%d"`, tag, i, j)] != base+int64(j) {
					t.Fatalf("request %s%d not contiguous: %v", tag, i, payloads)
				}
			}
		}
	}
	sort.Strings(payloads)
	for i := 1; i < len(payloads); i++ {
		if payloads[i] == payloads[i-1] {
			t.Fatalf("record %s stored twice", payloads[i])
		}
	}
}
