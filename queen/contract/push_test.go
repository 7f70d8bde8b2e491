package contract

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

// §5 example replayed after 41 earlier records, so the offsets are the
// example's exactly; then §6's example fetch reads them back.
func TestPushAndFetchExamples(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("orders")
	pushN(t, c, q, "3", 41)
	p0 := json.RawMessage(`{"k":"a2V5LTE=","t":1787824800123,"v":"eyJuIjoxfQ=="}`)
	p1 := json.RawMessage(`{"k":null,"v":"eA=="}`)
	res := must[[]queen.PushResult](t)(c.Push(ctx, []queen.PushItem{
		{Queue: q, Partition: "3", Payload: p0},
		{Queue: q, Partition: "3", Payload: p1},
	}))
	for i, want := range []int64{41, 42} {
		r := res[i]
		if r.Index != i || r.Status != queen.StatusQueued || *r.Offset != want || r.QueueName != q ||
			r.MessageID == "" || r.TransactionID != r.MessageID {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	if res[0].MessageID == res[1].MessageID {
		t.Fatal("two items share a message id")
	}

	fr := must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{
		Entries: []queen.FetchEntry{
			{Queue: q, Partition: "3", Offset: 41, MaxBytes: 1048576},
			{Queue: q, Partition: "9", Offset: 0, MaxBytes: 1048576},
		}, MaxWaitMs: 500, MinBytes: 1}))
	e := fr[0]
	if e.Error != "" || e.HighWatermark != 43 || e.LogStartOffset != 0 || len(e.Records) != 2 {
		t.Fatalf("entry 0: %+v", e)
	}
	for i, rec := range e.Records {
		if rec.Offset != int64(41+i) || rec.TransactionID != res[i].TransactionID || !tsFormat.MatchString(rec.TS) {
			t.Fatalf("record %d: %+v", i, rec)
		}
	}
	if string(e.Records[0].Payload) != string(p0) || string(e.Records[1].Payload) != string(p1) {
		t.Fatalf("payloads not verbatim: %s / %s", e.Records[0].Payload, e.Records[1].Payload)
	}
	if e.Records[0].TS != e.Records[1].TS {
		t.Fatalf("one push, two segment times: %s %s", e.Records[0].TS, e.Records[1].TS)
	}
	rec := envelope.DecodePayload(e.Records[0].Payload, queen.ParseTS(e.Records[0].TS))
	if string(rec.Key) != "key-1" || string(rec.Value) != `{"n":1}` || rec.Timestamp != 1787824800123 {
		t.Fatalf("decoded %+v", rec)
	}
	if e9 := fr[1]; e9.Error != "" || len(e9.Records) != 0 || e9.HighWatermark != 0 || e9.LogStartOffset != 0 {
		t.Fatalf("never-written partition of an existing queue is an empty log: %+v", e9)
	}
	// Raw shape: records present as an array even when empty.
	r := shared.raw(t, "POST", "/api/v1/fetch", "", `{"entries":[{"queue":"`+q+`","partition":"9","offset":0}]}`)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"records":[]`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

// Offsets per (queue, partition) from 0, contiguous within a request in
// item order even when partitions interleave; payloads stored byte for byte.
func TestPushContiguousAndVerbatim(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("mix")
	var items []queen.PushItem
	payloads := []string{`{"n":1.0e2}`, `123456789012345678901234567890`, `"str"`, `[1,{"a":null}]`, `{"é":"\u00e9"}`, `null`, `true`, "{ \"sp\" : [ 1 ,\n\t2 ] }"}
	for i, p := range payloads {
		items = append(items, queen.PushItem{Queue: q, Partition: fmt.Sprint(i % 2), Payload: json.RawMessage(p)})
	}
	res := must[[]queen.PushResult](t)(c.Push(ctx, items))
	next := map[string]int64{}
	for i, r := range res {
		p := items[i].Partition
		if *r.Offset != next[p] {
			t.Fatalf("item %d in partition %s got offset %d, want %d", i, p, *r.Offset, next[p])
		}
		next[p]++
	}
	for _, p := range []string{"0", "1"} {
		f := fetchOne(t, c, q, p, 0)
		for _, rec := range f.Records {
			i := int(rec.Offset)*2 + map[string]int{"0": 0, "1": 1}[p]
			if string(rec.Payload) != payloads[i] {
				t.Fatalf("partition %s offset %d: %s, want %s", p, rec.Offset, rec.Payload, payloads[i])
			}
		}
	}
	// A missing partition defaults to "Default"; items:[] answers 201 [].
	r := shared.raw(t, "POST", "/api/v1/push", "", `{"items":[{"queue":"`+q+`","payload":{"x":1},"traceId":"ignored"}]}`)
	if r.Status != 201 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if f := fetchOne(t, c, q, "Default", 0); len(f.Records) != 1 {
		t.Fatalf("Default partition: %+v", f)
	}
	if r := shared.raw(t, "POST", "/api/v1/push", "", `{"items":[]}`); r.Status != 201 || strings.TrimSpace(string(r.Body)) != "[]" {
		t.Fatalf("empty push: %d %s", r.Status, r.Body)
	}
}

// Concurrent writers never share an offset and leave no gap.
func TestPushConcurrentOffsetsUnique(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("conc")
	const writers, calls, batch = 8, 10, 5
	var mu sync.Mutex
	var all []int64
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				items := make([]queen.PushItem, batch)
				for j := range items {
					items[j] = queen.PushItem{Queue: q, Partition: "0", Payload: env("", "x", -1)}
				}
				res, err := c.Push(ctx, items)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for j, r := range res {
					if j > 0 && *r.Offset != *res[j-1].Offset+1 {
						t.Errorf("one request not contiguous: %d after %d", *r.Offset, *res[j-1].Offset)
					}
					all = append(all, *r.Offset)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for i, o := range all {
		if o != int64(i) {
			t.Fatalf("offsets not exactly 0..%d: position %d holds %d", len(all)-1, i, o)
		}
	}
	if f := fetchOne(t, c, q, "0", 0); f.HighWatermark != writers*calls*batch {
		t.Fatalf("hwm %d", f.HighWatermark)
	}
}

// Dedup per (queue, partition, transactionId) within dedupWindowSeconds.
func TestPushDedup(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("dedup")
	res := must[[]queen.PushResult](t)(c.Push(ctx, []queen.PushItem{
		{Queue: q, Partition: "0", Payload: rawJSON(1), TransactionID: "tx-a"},
		{Queue: q, Partition: "0", Payload: rawJSON(2), TransactionID: "tx-a"}, // repeated in the request
		{Queue: q, Partition: "1", Payload: rawJSON(3), TransactionID: "tx-a"}, // other partition: stored
	}))
	if res[0].Status != queen.StatusQueued || res[0].TransactionID != "tx-a" {
		t.Fatalf("%+v", res[0])
	}
	if res[1].Status != queen.StatusDuplicate || *res[1].Offset != *res[0].Offset || res[1].MessageID != res[0].MessageID {
		t.Fatalf("in-request repeat: %+v (original %+v)", res[1], res[0])
	}
	if res[2].Status != queen.StatusQueued || *res[2].Offset != 0 {
		t.Fatalf("other partition: %+v", res[2])
	}
	again := must[[]queen.PushResult](t)(c.Push(ctx, []queen.PushItem{
		{Queue: q, Partition: "0", Payload: rawJSON(4), TransactionID: "tx-a"},
		{Queue: q, Partition: "0", Payload: rawJSON(5)},
	}))
	if again[0].Status != queen.StatusDuplicate || *again[0].Offset != *res[0].Offset {
		t.Fatalf("later repeat: %+v", again[0])
	}
	if again[1].Status != queen.StatusQueued || *again[1].Offset != 1 {
		t.Fatalf("offset reused or skipped after a duplicate: %+v", again[1])
	}
	if f := fetchOne(t, c, q, "0", 0); len(f.Records) != 2 || string(f.Records[0].Payload) != "1" || f.Records[0].TransactionID != "tx-a" {
		t.Fatalf("stored: %+v", f)
	}
	// dedupWindowSeconds 0 disables the window: a later request's repeat is
	// stored again.
	q2 := uniq("nodedup")
	must[*queen.ConfigureResult](t)(c.Configure(ctx, q2, map[string]any{"dedupWindowSeconds": 0}))
	for want := int64(0); want < 2; want++ {
		res = must[[]queen.PushResult](t)(c.Push(ctx, []queen.PushItem{{Queue: q2, Partition: "0", Payload: rawJSON(want), TransactionID: "tx-b"}}))
		if res[0].Status != queen.StatusQueued || *res[0].Offset != want {
			t.Fatalf("window 0 still dedups: %+v", res[0])
		}
	}
}

// Bad push bodies: 400 for the whole batch, nothing written.
func TestPushRefusals(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("refuse")
	pushN(t, c, q, "0", 1)
	good := `{"queue":"` + q + `","partition":"0","payload":1}`
	for name, body := range map[string]string{
		"bad json":           `{"items":[` + good,
		"items not array":    `{"items":{"queue":"x"}}`,
		"no items":           `{}`,
		"body array":         `[` + good + `]`,
		"queue missing":      `{"items":[` + good + `,{"partition":"0","payload":1}]}`,
		"queue number":       `{"items":[` + good + `,{"queue":7,"payload":1}]}`,
		"partition object":   `{"items":[` + good + `,{"queue":"` + q + `","partition":{},"payload":1}]}`,
		"payload missing":    `{"items":[` + good + `,{"queue":"` + q + `","partition":"0"}]}`,
		"ctrl in queue":      `{"items":[` + good + `,{"queue":"a\tb","partition":"0","payload":1}]}`,
		"ctrl in partition":  `{"items":[` + good + `,{"queue":"` + q + `","partition":"0\n","payload":1}]}`,
		"ctrl in txid":       `{"items":[` + good + `,{"queue":"` + q + `","partition":"0","payload":1,"transactionId":"a\u0000"}]}`,
		"txid number":        `{"items":[` + good + `,{"queue":"` + q + `","partition":"0","payload":1,"transactionId":5}]}`,
		"txid over 65535 B":  `{"items":[` + good + `,{"queue":"` + q + `","partition":"0","payload":1,"transactionId":"` + strings.Repeat("x", 65536) + `"}]}`,
		"trailing garbage":   `{"items":[` + good + `]} x`,
		"empty body":         ``,
		"payload bad number": `{"items":[{"queue":"` + q + `","partition":"0","payload":01}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := shared.raw(t, "POST", "/api/v1/push", "", body)
			if r.Status != 400 {
				t.Fatalf("status %d %s", r.Status, r.Body)
			}
			if _, ok := r.json(t)["error"].(string); !ok {
				t.Fatalf("no error field: %s", r.Body)
			}
		})
	}
	if f := fetchOne(t, c, q, "0", 0); f.HighWatermark != 1 {
		t.Fatalf("a refused batch wrote records: hwm %d", f.HighWatermark)
	}
	if _, ok := findQueue(t, c, "a\tb"); ok {
		t.Fatal("a refused batch created a queue")
	}
	// The typed client sees a refused batch as KindBadRequest.
	_, err := c.Push(ctx, []queen.PushItem{{Queue: "bad\x01name", Partition: "0", Payload: rawJSON(1)}})
	mustKind(t, err, queen.KindBadRequest)
}
