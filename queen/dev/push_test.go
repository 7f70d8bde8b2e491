package dev

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// The §5 example exchange, replayed after 41 earlier records.
func TestPushContractExample(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("orders", "3", 41)
	st, raw := e.post("/api/v1/push", `{"items":[{"queue":"orders","partition":"3","payload":{"k":"a2V5LTE=","t":1787824800123,"v":"eyJuIjoxfQ=="}},
          {"queue":"orders","partition":"3","payload":{"k":null,"v":"eA=="}}]}`)
	v := wantStatus(t, st, raw, 201)
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		t.Fatalf("want a 2-element array, got %s", raw)
	}
	for i, want := range []int64{41, 42} {
		r := arr[i]
		if num(field(r, "index")) != int64(i) || num(field(r, "offset")) != want || field(r, "status") != "queued" || field(r, "queueName") != "orders" {
			t.Errorf("result %d = %v", i, r)
		}
		if field(r, "message_id") != field(r, "transaction_id") || len(field(r, "message_id").(string)) != 36 {
			t.Errorf("result %d ids = %v", i, r)
		}
	}
}

func TestPushEmptyItems(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw := e.post("/api/v1/push", `{"items":[]}`)
	if st != 201 || string(raw) != "[]" {
		t.Fatalf("got %d %s, want 201 []", st, raw)
	}
}

func TestPushOffsetsPerPartitionContiguous(t *testing.T) {
	e := newEnv(t, Options{})
	items := []queen.PushItem{
		{Queue: "q", Partition: "0", Payload: json.RawMessage(`1`)},
		{Queue: "q", Partition: "1", Payload: json.RawMessage(`2`)},
		{Queue: "q", Partition: "0", Payload: json.RawMessage(`3`)},
		{Queue: "q", Payload: json.RawMessage(`4`)}, // Default
		{Queue: "r", Partition: "0", Payload: json.RawMessage(`5`)},
		{Queue: "q", Partition: "0", Payload: json.RawMessage(`6`)},
	}
	res, err := e.qc.Push(ctx(t), items)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{0, 0, 1, 0, 0, 2}
	for i, r := range res {
		if *r.Offset != want[i] || r.Status != queen.StatusQueued {
			t.Errorf("item %d: offset %d status %s, want %d queued", i, *r.Offset, r.Status, want[i])
		}
	}
	res, err = e.qc.Push(ctx(t), items[:3])
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []int64{3, 1, 4} {
		if *res[i].Offset != w {
			t.Errorf("second push item %d offset %d, want %d", i, *res[i].Offset, w)
		}
	}
	qs, err := e.qc.Queues(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, q := range qs {
		got[q.Name] = q.Partitions
	}
	if got["q"] != 3 || got["r"] != 1 {
		t.Errorf("partition counts %v, want q:3 r:1", got)
	}
}

// Payload bytes are stored as sent: numbers are not renormalised.
func TestPushPayloadByteForByte(t *testing.T) {
	e := newEnv(t, Options{})
	payload := `{"big":12345678901234567890123,"f":1.50,"e":1E+2,"s":"\u00e9\n","a":[ 1, 2 ]}`
	st, raw := e.post("/api/v1/push", `{"items":[{"queue":"q","payload":`+payload+`}]}`)
	wantStatus(t, st, raw, 201)
	st, raw = e.post("/api/v1/fetch", `{"entries":[{"queue":"q","offset":0}]}`)
	wantStatus(t, st, raw, 200)
	if !strings.Contains(string(raw), `"payload":`+payload+`,`) {
		t.Fatalf("payload not verbatim in %s", raw)
	}
}

func TestPushBadBodies(t *testing.T) {
	cases := map[string]string{
		"malformed":          `{"items":[`,
		"items missing":      `{}`,
		"items not array":    `{"items":{}}`,
		"queue missing":      `{"items":[{"payload":1}]}`,
		"queue not string":   `{"items":[{"queue":5,"payload":1}]}`,
		"payload missing":    `{"items":[{"queue":"q"}]}`,
		"control in queue":   `{"items":[{"queue":"q\u0001","payload":1}]}`,
		"control in part":    `{"items":[{"queue":"q","partition":"a\nb","payload":1}]}`,
		"control in txid":    `{"items":[{"queue":"q","transactionId":"x\u007f","payload":1}]}`,
		"partition number":   `{"items":[{"queue":"q","partition":3,"payload":1}]}`,
		"second item bad":    `{"items":[{"queue":"q","payload":1},{"queue":"q","payload":2,"transactionId":"\u0000"}]}`,
		"not an object":      `[1,2]`,
		"trailing garbage":   `{"items":[]} x`,
		"txid too long":      `{"items":[{"queue":"q","payload":1,"transactionId":"` + strings.Repeat("x", maxTransactionID+1) + `"}]}`,
		"payload not json":   `{"items":[{"queue":"q","payload":nope}]}`,
		"empty body":         ``,
		"items null":         `{"items":null}`,
		"partition object":   `{"items":[{"queue":"q","partition":{},"payload":1}]}`,
		"queue empty string": `{"items":[{"queue":"","payload":1}]}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, Options{})
			before := e.b.Mutations()
			st, raw := e.post("/api/v1/push", body)
			v := wantStatus(t, st, raw, 400)
			if s, _ := field(v, "error").(string); !strings.HasPrefix(s, "bad body: ") {
				t.Errorf("error body %s", raw)
			}
			if e.b.Mutations() != before {
				t.Errorf("refused push wrote something")
			}
		})
	}
}

func TestPushDedup(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	item := func(tx string, p string) queen.PushItem {
		return queen.PushItem{Queue: "q", Partition: p, Payload: json.RawMessage(`"` + tx + `"`), TransactionID: tx}
	}
	res, err := e.qc.Push(ctx(t), []queen.PushItem{item("a", "0"), item("b", "0"), item("a", "0"), item("a", "1")})
	if err != nil {
		t.Fatal(err)
	}
	if res[2].Status != queen.StatusDuplicate || *res[2].Offset != 0 || res[2].MessageID != res[0].MessageID || res[2].TransactionID != "a" {
		t.Errorf("in-request repeat: %+v (original %+v)", res[2], res[0])
	}
	if res[3].Status != queen.StatusQueued || *res[3].Offset != 0 {
		t.Errorf("same txid on another partition must be stored: %+v", res[3])
	}
	if *res[1].Offset != 1 {
		t.Errorf("b offset %d", *res[1].Offset)
	}
	clk.Advance(3599e9)
	res, err = e.qc.Push(ctx(t), []queen.PushItem{item("b", "0"), item("c", "0")})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != queen.StatusDuplicate || *res[0].Offset != 1 {
		t.Errorf("inside window: %+v", res[0])
	}
	if res[1].Status != queen.StatusQueued || *res[1].Offset != 2 {
		t.Errorf("duplicates must not consume offsets: %+v", res[1])
	}
	clk.Advance(2e9)
	res, err = e.qc.Push(ctx(t), []queen.PushItem{item("b", "0")})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != queen.StatusQueued || *res[0].Offset != 3 {
		t.Errorf("outside window: %+v", res[0])
	}
	res, err = e.qc.Push(ctx(t), []queen.PushItem{item("b", "0")})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != queen.StatusDuplicate || *res[0].Offset != 3 {
		t.Errorf("a re-stored transactionId must dedup against its newest record: %+v", res[0])
	}
	// dedupWindowSeconds 0 disables dedup.
	if _, err := e.qc.Configure(ctx(t), "q", map[string]any{"dedupWindowSeconds": 0}); err != nil {
		t.Fatal(err)
	}
	res, err = e.qc.Push(ctx(t), []queen.PushItem{item("c", "0")})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != queen.StatusQueued {
		t.Errorf("window 0: %+v", res[0])
	}
}

// Parallel pushes never share an offset and never leave a gap.
func TestPushConcurrentNoSharedOffsets(t *testing.T) {
	e := newEnv(t, Options{Dir: t.TempDir()})
	const workers, per, batch = 8, 20, 5
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				items := make([]queen.PushItem, batch)
				for j := range items {
					items[j] = queen.PushItem{Queue: "c", Partition: "0", Payload: json.RawMessage(fmt.Sprintf(`"%d-%d-%d"`, w, i, j))}
				}
				res, err := e.qc.Push(ctx(t), items)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for j, r := range res {
					if j > 0 && *r.Offset != *res[j-1].Offset+1 {
						errs <- fmt.Errorf("non-contiguous offsets in one request: %d after %d", *r.Offset, *res[j-1].Offset)
					}
					if prev, dup := seen[*r.Offset]; dup {
						errs <- fmt.Errorf("offset %d given to %s and %d-%d-%d", *r.Offset, prev, w, i, j)
					}
					seen[*r.Offset] = fmt.Sprintf("%d-%d-%d", w, i, j)
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for off := int64(0); off < workers*per*batch; off++ {
		if _, ok := seen[off]; !ok {
			t.Fatalf("offset %d never assigned", off)
		}
	}
}

// The fast push decoder agrees with encoding/json on every shape it takes
// and hands everything unusual to it.
func TestScanPushBodyMatchesEncodingJSON(t *testing.T) {
	accepted := []string{
		`{"items":[{"queue":"q","partition":"0","payload":{"k":null,"v":"eA=="},"transactionId":"t","traceId":"x"}]}`,
		` { "items" : [ ] , "other" : [1,{"a":[true,false,null,-0.5e+3]}] } `,
		`{"items":[{"queue":"q\u00e9\n","payload":"\ud83d\ude00","partition":null,"transactionId":null}]}`,
		`{"items":[{"queue":"q","queue":"r","payload":1,"payload":[1, 2]}]}`,
		`{"items":[{"payload":12345678901234567890.123e-7}]}`,
		"{\"items\":[{\"queue\":\"\xff\",\"payload\":\"\xfe\"}]}",
		// Items share the decoded queue of an equal token, never of an unequal one.
		`{"items":[{"queue":"a","payload":1},{"queue":"b","payload":2},{"queue":"a","payload":3},{"queue":null,"payload":4},{"queue":"\u0061b","payload":5},{"payload":6},{"queue":null,"payload":7}]}`,
	}
	for _, body := range accepted {
		if _, ok := scanPushBody(nil, []byte(body)); !ok {
			t.Errorf("fast path refused %q", body)
		}
		checkPushScan(t, []byte(body))
	}
	fallback := []string{
		`{"ITEMS":[]}`, `{"items":[{"Queue":"q","payload":1}]}`, `{"items":[null]}`, `{"items":null}`,
		`{"it\u0065ms":[]}`, `{"items":[{"queue":5,"payload":1}]}`, `{"items":[]} x`, `{"items":[{"payload":01}]}`,
		`{"items":[{"payload":"\x"}]}`, "{\"items\":[{\"payload\":\"a\x01\"}]}", `{}`, `[]`, ``, `{"items":[{"payload":1,}]}`,
		`{"items":[{"payload":-}]}`, `{"items":[{"payload":1.}]}`, `{"items":[{"payload":tru}]}`, `{"items":[{"DATA":1}]}`,
	}
	for _, body := range fallback {
		if _, ok := scanPushBody(nil, []byte(body)); ok {
			t.Errorf("fast path took %q", body)
		}
	}
}
