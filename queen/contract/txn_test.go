package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// §8 example replayed: a record, the txn claim (expect = held version,
// required) and two offset rows commit together; then the fenced variant
// rolls everything back with the precondition body.
func TestTransactionExampleAndFence(t *testing.T) {
	c := shared.client(t, "")
	out, tx, g := uniq("out"), uniq("tx"), uniq("billing")
	txKey, idxKey, offKey := queen.TxnKey(tx), queen.GroupIndexKey(g), queen.GroupOffsetKey(g, "in", 0)
	held := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(txKey, map[string]any{"pid": 7, "epoch": 0, "state": "open"}, i64(0))}))[0].Version

	payload := json.RawMessage(`{"k":null,"v":"QQ==","t":1787824800123}`)
	txnVal := `{"pid":7,"epoch":0,"state":"committed","seq":1,"node":0,"incarnation":"3f2a","ts":1787824800200}`
	req := func(expect int64, tag string) queen.TxnRequest {
		return queen.TxnRequest{
			Operations: []queen.TxnOperation{{Type: "push", Items: []queen.PushItem{{Queue: out, Partition: "0", Payload: payload}}}},
			KV: []queen.KVOp{
				{Op: queen.OpPut, NS: queen.Namespace, Key: txKey, Value: json.RawMessage(txnVal), Forever: true, Expect: i64(expect), Required: true},
				kvPut(idxKey, map[string]any{"pt": "consumer", "ts": 1787824800200, "tag": tag}, nil),
				kvPut(offKey, map[string]any{"offset": 18, "metadata": "", "ts": 1787824800200, "tag": tag}, nil),
			},
		}
	}
	res := must[[]queen.KVResult](t)(c.Transaction(ctx, req(held, "a")))
	if len(res) != 3 || !res[0].Applied || res[0].Key != txKey || res[0].Version == held {
		t.Fatalf("rider results: %+v", res)
	}
	for i, r := range res {
		if r.Index != 1+i || *r.OpIndex != i || r.Type != "kv" || r.Op != queen.OpPut || !r.Applied {
			t.Fatalf("rider %d: %+v", i, r)
		}
	}
	f := fetchOne(t, c, out, "0", 0)
	if len(f.Records) != 1 || string(f.Records[0].Payload) != string(payload) || f.HighWatermark != 1 {
		t.Fatalf("committed record: %+v", f)
	}
	got := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(txKey, idxKey, offKey)}))[0]
	if len(got.Rows) != 3 {
		t.Fatalf("committed rider rows: %+v", got)
	}
	// The missing queue was created by the transaction.
	if _, ok := findQueue(t, c, out); !ok {
		t.Fatal("transaction did not create its queue")
	}

	// Fenced: the held version is stale now.
	_, err := c.Transaction(ctx, req(held, "b"))
	var te *queen.TxnError
	if !errors.As(err, &te) || !te.Fenced() || te.KVIndex != 0 || te.KVReason != queen.ReasonVersion || te.Version != res[0].Version {
		t.Fatalf("fenced: %#v", err)
	}
	jsonEq(t, te.Value, []byte(txnVal))
	if f := fetchOne(t, c, out, "0", 0); f.HighWatermark != 1 {
		t.Fatalf("a rolled-back transaction stored records: hwm %d", f.HighWatermark)
	}
	after := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(idxKey)}))[0]
	if !strings.Contains(string(after.Rows[0].Value), `"tag":"a"`) {
		t.Fatalf("a rolled-back transaction wrote KV: %s", after.Rows[0].Value)
	}
	// Raw fenced body shape (§8).
	body, _ := json.Marshal(req(held, "c"))
	r := shared.raw(t, "POST", "/api/v1/transaction", "", string(body))
	m := r.json(t)
	if r.Status != 200 || m["success"] != false || m["reason"] != "kv_precondition" || m["ok"] != false ||
		m["failedIndex"] != float64(1) || m["kvReason"] != "version" || len(m["results"].([]any)) != 0 {
		t.Fatalf("fenced body: %d %s", r.Status, r.Body)
	}
	if id, _ := m["transactionId"].(string); id == "" {
		t.Fatalf("no transactionId: %s", r.Body)
	}
	// A committed body: push echoes carry no offset.
	body, _ = json.Marshal(queen.TxnRequest{Operations: []queen.TxnOperation{{Type: "push", Items: []queen.PushItem{{Queue: out, Partition: "0", Payload: payload}}}}, KV: []queen.KVOp{}})
	r = shared.raw(t, "POST", "/api/v1/transaction", "", string(body))
	m = r.json(t)
	echo := m["results"].([]any)[0].(map[string]any)
	if r.Status != 200 || m["success"] != true || echo["type"] != "push" || echo["index"] != float64(0) || echo["queueName"] != out {
		t.Fatalf("push-only transaction: %d %s", r.Status, r.Body)
	}
	if _, has := echo["offset"]; has {
		t.Fatalf("push echo carries an offset: %s", r.Body)
	}
}

// A kv-only bundle (operations []) runs the rider alone with kvBase 0; a
// failing required op later in the rider reports its own ordinal.
func TestTransactionKVOnlyAndOrdinal(t *testing.T) {
	c := shared.client(t, "")
	p := "qk:group:" + uniq("kvonly") + ":t:"
	res := must[[]queen.KVResult](t)(c.Transaction(ctx, queen.TxnRequest{KV: []queen.KVOp{kvPut(p+"0", 1, nil), kvGet(p + "0")}}))
	if res[0].Index != 0 || !res[0].Applied || res[1].Index != 1 || len(res[1].Rows) != 1 {
		t.Fatalf("%+v", res)
	}
	out := uniq("out")
	_, err := c.Transaction(ctx, queen.TxnRequest{
		Operations: []queen.TxnOperation{{Type: "push", Items: []queen.PushItem{
			{Queue: out, Partition: "0", Payload: rawJSON(1)}, {Queue: out, Partition: "1", Payload: rawJSON(2)}}}},
		KV: []queen.KVOp{kvPut(p+"1", 1, nil), kvPut(p+"2", 2, i64(0)), {Op: queen.OpPut, NS: queen.Namespace, Key: p + "0", Value: rawJSON(3), Forever: true, Expect: i64(0), Required: true}},
	})
	var te *queen.TxnError
	if !errors.As(err, &te) || !te.Fenced() || te.KVIndex != 2 || te.KVReason != queen.ReasonExists {
		t.Fatalf("%#v", err)
	}
	g := must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvGet(p+"1", p+"2")}))[0]
	if len(g.Rows) != 0 {
		t.Fatalf("rolled back rider wrote: %+v", g)
	}
	if _, ok := findQueue(t, c, out); ok {
		if f := fetchOne(t, c, out, "0", 0); f.HighWatermark != 0 {
			t.Fatal("rolled back transaction stored records")
		}
	}
}

// Duplicates inside a bundle are echoed; a transactionId already stored in
// the window rolls the unit back with reason duplicate.
func TestTransactionDuplicates(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("txdup")
	body := `{"operations":[{"type":"push","items":[{"queue":"` + q + `","partition":"0","payload":1,"transactionId":"d1"},{"queue":"` + q + `","partition":"0","payload":2,"transactionId":"d1"}]}],"kv":[]}`
	r := shared.raw(t, "POST", "/api/v1/transaction", "", body)
	m := r.json(t)
	if r.Status != 200 || m["success"] != true {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if echo := m["results"].([]any)[1].(map[string]any); echo["duplicate"] != true || echo["index"] != float64(1) {
		t.Fatalf("repeat inside the bundle: %s", r.Body)
	}
	if f := fetchOne(t, c, q, "0", 0); f.HighWatermark != 1 {
		t.Fatalf("bundle duplicate stored twice: hwm %d", f.HighWatermark)
	}
	r = shared.raw(t, "POST", "/api/v1/transaction", "", `{"operations":[{"type":"push","items":[{"queue":"`+q+`","partition":"0","payload":3},{"queue":"`+q+`","partition":"0","payload":4,"transactionId":"d1"}]}]}`)
	if m := r.json(t); r.Status != 200 || m["success"] != false || m["reason"] != "duplicate" {
		t.Fatalf("window duplicate: %d %s", r.Status, r.Body)
	}
	if f := fetchOne(t, c, q, "0", 0); f.HighWatermark != 1 {
		t.Fatalf("rolled back duplicate bundle stored records: hwm %d", f.HighWatermark)
	}
}

// Caps and refusals of §8: nothing is written by a refused bundle.
func TestTransactionRefusals(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("txref")
	p := "qk:group:" + uniq("txref") + ":t:"
	push := `{"type":"push","items":[{"queue":"` + q + `","partition":"0","payload":1}]}`
	put := func(i int) string {
		return fmt.Sprintf(`{"op":"put","ns":"queen-kafka","key":"%s%d","value":%d,"forever":true}`, p, i, i)
	}
	many := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = put(i)
		}
		return strings.Join(s, ",")
	}
	keys := make([]string, 257)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"qk:%d"`, i)
	}
	cases := []struct {
		name, body string
		status     int
		reason     string
	}{
		{"65 kv ops", `{"operations":[` + push + `],"kv":[` + many(65) + `]}`, 400, "bad_request"},
		{"257 keys", `{"operations":[` + push + `],"kv":[{"op":"getMany","ns":"queen-kafka","keys":[` + strings.Join(keys, ",") + `]}]}`, 400, "bad_request"},
		{"getPrefix in rider", `{"operations":[` + push + `],"kv":[{"op":"getPrefix","ns":"queen-kafka","prefix":"qk:"}]}`, 400, "bad_request"},
		{"kv not array", `{"operations":[` + push + `],"kv":{}}`, 400, "bad_request"},
		{"kv inside operations", `{"operations":[` + push + `,{"type":"kv","op":"put"}],"kv":[]}`, 400, "bad_request"},
		{"unknown type", `{"operations":[` + push + `,{"type":"pop"}],"kv":[]}`, 400, "bad_request"},
		{"no operations no kv", `{}`, 400, "bad_request"},
		{"bad json", `{"operations":[`, 400, "bad_request"},
		{"invalid kv op", `{"operations":[` + push + `],"kv":[{"op":"put","ns":"queen-kafka","key":"qk:x","value":1}]}`, 400, "bad_request"},
		{"value over 64 KiB", `{"operations":[` + push + `],"kv":[{"op":"put","ns":"queen-kafka","key":"qk:x","value":"` + strings.Repeat("v", 65536) + `","forever":true}]}`, 413, "payload_too_large"},
		{"ctrl in queue", `{"operations":[{"type":"push","items":[{"queue":"a\u0001","partition":"0","payload":1}]}],"kv":[` + put(0) + `]}`, 400, "bad_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := shared.raw(t, "POST", "/api/v1/transaction", "", tc.body)
			m := r.json(t)
			if r.Status != tc.status || m["success"] != false || m["reason"] != tc.reason {
				t.Fatalf("status %d body %s; want %d reason %q", r.Status, r.Body, tc.status, tc.reason)
			}
		})
	}
	if r := shared.raw(t, "POST", "/api/v1/transaction", "", `{"operations":[`+push+`],"kv":[`+many(64)+`]}`); r.Status != 200 || r.json(t)["success"] != true {
		t.Fatalf("64 kv ops: %d %s", r.Status, r.Body)
	}
	if f := fetchOne(t, c, q, "0", 0); f.HighWatermark != 1 {
		t.Fatalf("refused bundles stored records: hwm %d", f.HighWatermark)
	}
	// The typed client maps a refused bundle by status.
	_, err := c.Transaction(ctx, queen.TxnRequest{KV: []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: "qk:"}}})
	mustKind(t, err, queen.KindBadRequest)
}
