package dev

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

const txnExample = `{"operations":[{"type":"push","items":[{"queue":"out","partition":"0","payload":{"k":null,"v":"QQ==","t":1787824800123}}]}],
 "kv":[
  {"op":"put","ns":"queen-kafka","key":"qk:txn:tx-1","value":{"pid":7,"epoch":0,"state":"committed","seq":1,"node":0,"incarnation":"3f2a","ts":1787824800200},"forever":true,"expect":%d,"required":true},
  {"op":"put","ns":"queen-kafka","key":"qk:groups:billing","value":{"pt":"consumer","ts":1787824800200},"forever":true},
  {"op":"put","ns":"queen-kafka","key":"qk:group:billing:in:0","value":{"offset":18,"metadata":"","ts":1787824800200},"forever":true}]}`

// The §8 example exchange and its fenced variant.
func TestTxnContractExample(t *testing.T) {
	e := newEnv(t, Options{})
	res, err := e.qc.KV(ctx(t), []queen.KVOp{put("qk:txn:tx-1", `{"pid":7,"epoch":0,"state":"open"}`)})
	if err != nil {
		t.Fatal(err)
	}
	held := res[0].Version
	st, raw := e.post("/api/v1/transaction", fmt.Sprintf(txnExample, held))
	v := wantStatus(t, st, raw, 200)
	if field(v, "success") != true || len(field(v, "transactionId").(string)) != 36 {
		t.Fatalf("not committed: %s", raw)
	}
	r := field(v, "results").([]any)
	if len(r) != 4 {
		t.Fatalf("%d results: %s", len(r), raw)
	}
	p := r[0]
	if num(field(p, "index")) != 0 || field(p, "type") != "push" || field(p, "success") != true || field(p, "queueName") != "out" ||
		field(p, "messageId") != field(p, "transactionId") || field(p, "duplicate") != nil || field(p, "offset") != nil {
		t.Errorf("push echo %v", p)
	}
	for i := 1; i <= 3; i++ {
		if num(field(r[i], "index")) != int64(i) || num(field(r[i], "opIndex")) != int64(i-1) || field(r[i], "type") != "kv" || field(r[i], "applied") != true {
			t.Errorf("kv result %d: %v", i, r[i])
		}
	}
	// Ascending key order: qk:group: < qk:groups: < qk:txn:.
	if !(num(field(r[3], "version")) < num(field(r[2], "version")) && num(field(r[2], "version")) < num(field(r[1], "version"))) {
		t.Errorf("versions not in key order: %s", raw)
	}
	fr, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "out", Partition: "0", Offset: 0}}})
	if err != nil || len(fr[0].Records) != 1 {
		t.Fatalf("committed record not readable: %+v %v", fr, err)
	}

	// Fenced: the same bundle with the stale version rolls back everything.
	before := e.b.Mutations()
	st, raw = e.post("/api/v1/transaction", fmt.Sprintf(txnExample, held))
	v = wantStatus(t, st, raw, 200)
	newV := num(field(r[1], "version"))
	if field(v, "success") != false || field(v, "reason") != "kv_precondition" || field(v, "error") != "kv_precondition_failed" ||
		field(v, "ok") != false || num(field(v, "failedIndex")) != 1 || field(v, "kvReason") != "version" ||
		num(field(v, "version")) != newV || len(field(v, "results").([]any)) != 0 || field(v, "value", "state") != "committed" {
		t.Errorf("fenced body %s", raw)
	}
	if e.b.Mutations() != before {
		t.Error("rolled-back transaction wrote something")
	}
	fr, _ = e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "out", Partition: "0", Offset: 0}}})
	if fr[0].HighWatermark != 1 {
		t.Errorf("rolled-back record stored: hwm %d", fr[0].HighWatermark)
	}
	// Through the client: a TxnError naming rider op 0.
	_, err = e.qc.Transaction(ctx(t), queen.TxnRequest{
		Operations: []queen.TxnOperation{{Type: "push", Items: []queen.PushItem{{Queue: "out", Partition: "0", Payload: json.RawMessage(`1`)}, {Queue: "out", Partition: "1", Payload: json.RawMessage(`2`)}}}},
		KV:         []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:txn:tx-1", Value: json.RawMessage(`{}`), Forever: true, Expect: i64(held), Required: true}},
	})
	var te *queen.TxnError
	if !errors.As(err, &te) || !te.Fenced() || te.KVIndex != 0 || te.Version != newV {
		t.Errorf("client error %v (%+v)", err, te)
	}
}

func TestTxnRecordsContiguousAndDuplicates(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("out", "0", 3)
	body := `{"operations":[{"type":"push","items":[
		{"queue":"out","partition":"0","payload":1,"transactionId":"t1"},
		{"queue":"out","partition":"0","data":2},
		{"queue":"out","partition":"0","payload":3,"transactionId":"t1"}]},
		{"type":"push","queue":"new","partition":"","payload":4}],"kv":[]}`
	st, raw := e.post("/api/v1/transaction", body)
	v := wantStatus(t, st, raw, 200)
	if field(v, "success") != true || field(v, "results", 2, "duplicate") != true || field(v, "results", 2, "transactionId") != "t1" ||
		field(v, "results", 2, "messageId") != field(v, "results", 0, "messageId") || field(v, "results", 3, "queueName") != "new" {
		t.Fatalf("got %s", raw)
	}
	fr, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "out", Partition: "0", Offset: 3}, {Queue: "new", Partition: "", Offset: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(fr[0].Records) != 2 || fr[0].Records[0].Offset != 3 || string(fr[0].Records[1].Payload) != "2" || len(fr[1].Records) != 1 {
		t.Errorf("stored %+v", fr)
	}
	// A transactionId already stored inside the window rolls the unit back.
	clk.Advance(1e9)
	before := e.b.Mutations()
	st, raw = e.post("/api/v1/transaction", `{"operations":[{"type":"push","items":[{"queue":"out","partition":"0","payload":9},{"queue":"out","partition":"0","payload":1,"transactionId":"t1"}]}],
		"kv":[{"op":"put","ns":"queen-kafka","key":"x","value":1,"forever":true}]}`)
	v = wantStatus(t, st, raw, 200)
	if field(v, "success") != false || field(v, "reason") != "duplicate" {
		t.Errorf("window duplicate: %s", raw)
	}
	if e.b.Mutations() != before {
		t.Error("duplicate rollback wrote something")
	}
}

// Empty operations: the rider alone, same shape, kvBase 0.
func TestTxnKVOnly(t *testing.T) {
	e := newEnv(t, Options{})
	for _, body := range []string{
		`{"operations":[],"kv":[{"op":"put","ns":"queen-kafka","key":"k","value":1,"forever":true}]}`,
		`{"kv":[{"op":"getMany","ns":"queen-kafka","keys":["k"]}]}`,
	} {
		st, raw := e.post("/api/v1/transaction", body)
		v := wantStatus(t, st, raw, 200)
		if field(v, "success") != true || num(field(v, "results", 0, "index")) != 0 || num(field(v, "results", 0, "opIndex")) != 0 {
			t.Errorf("%s → %s", body, raw)
		}
	}
	res, err := e.qc.Transaction(ctx(t), queen.TxnRequest{KV: []queen.KVOp{put("k2", `2`)}})
	if err != nil || len(res) != 1 || !res[0].Applied {
		t.Errorf("client kv-only: %+v %v", res, err)
	}
}

func TestTxnRefusals(t *testing.T) {
	ops := make([]string, txnMaxKVOps+1)
	for i := range ops {
		ops[i] = fmt.Sprintf(`{"op":"get","ns":"a","key":"k%d"}`, i)
	}
	keys := make([]string, txnMaxKVKeys+1)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d"`, i)
	}
	item := `{"queue":"q","payload":1}`
	cases := []struct {
		name, body string
		status     int
		reason     string
	}{
		{"malformed", `{"operations":[`, 400, "bad_request"},
		{"nothing", `{}`, 400, "bad_request"},
		{"operations object", `{"operations":{}}`, 400, "bad_request"},
		{"kv not array", `{"operations":[],"kv":{}}`, 400, "bad_request"},
		{"unknown type", `{"operations":[{"type":"pop"}]}`, 400, "bad_request"},
		{"kv inside operations", `{"operations":[{"type":"kv"}]}`, 400, "bad_request"},
		{"ack with a bad field", `{"operations":[{"type":"ack","transactionId":5}]}`, 400, "bad_request"},
		{"timers", `{"operations":[],"timers":[{}]}`, 400, "bad_request"},
		{"getPrefix in rider", `{"operations":[],"kv":[{"op":"getPrefix","ns":"a","prefix":"p"}]}`, 400, "bad_request"},
		{"65 rider ops", `{"operations":[],"kv":[` + strings.Join(ops, ",") + `]}`, 400, "bad_request"},
		{"257 rider keys", `{"operations":[],"kv":[{"op":"getMany","ns":"a","keys":[` + strings.Join(keys, ",") + `]}]}`, 400, "bad_request"},
		{"rider value too large", `{"operations":[],"kv":[{"op":"put","ns":"a","key":"k","forever":true,"value":"` + strings.Repeat("v", kvMaxValue) + `"}]}`, 413, "payload_too_large"},
		{"rider bad op", `{"operations":[],"kv":[{"op":"put","ns":"a","key":"k","value":1}]}`, 400, "bad_request"},
		{"item without queue", `{"operations":[{"type":"push","items":[{"payload":1}]}]}`, 400, "bad_request"},
		{"item control chars", `{"operations":[{"type":"push","items":[{"queue":"q\u0007","payload":1}]}]}`, 400, "bad_request"},
		{"item without payload", `{"operations":[{"type":"push","items":[` + item + `,{"queue":"q"}]}]}`, 400, "bad_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			before := e.b.Mutations()
			st, raw := e.post("/api/v1/transaction", c.body)
			v := wantStatus(t, st, raw, c.status)
			if field(v, "success") != false || field(v, "reason") != c.reason || len(field(v, "transactionId").(string)) != 36 {
				t.Errorf("body %s", raw)
			}
			if r, ok := field(v, "results").([]any); !ok || len(r) != 0 {
				t.Errorf("results must be []: %s", raw)
			}
			if e.b.Mutations() != before {
				t.Error("refused transaction wrote something")
			}
		})
	}
}

// With BareVerdicts a lost precondition is answered as a server that could
// not report the detail answers it (§7.4): the verdict, its four detail
// fields null, nothing written.
func TestTxnBareVerdict(t *testing.T) {
	e := newEnv(t, Options{BareVerdicts: true})
	res, err := e.qc.KV(ctx(t), []queen.KVOp{put("qk:txn:tx-1", `{"pid":7,"epoch":0,"state":"open"}`)})
	if err != nil {
		t.Fatal(err)
	}
	before := e.b.Mutations()
	st, raw := e.post("/api/v1/transaction", fmt.Sprintf(txnExample, res[0].Version+1000))
	v := wantStatus(t, st, raw, 200).(map[string]any)
	if v["success"] != false || v["reason"] != "kv_precondition" || v["ok"] != false {
		t.Fatalf("not a verdict: %s", raw)
	}
	for _, k := range []string{"failedIndex", "kvReason", "version", "value"} {
		if f, ok := v[k]; !ok || f != nil {
			t.Errorf("%s = %v, want null: %s", k, f, raw)
		}
	}
	if e.b.Mutations() != before {
		t.Error("rolled-back transaction wrote something")
	}
}
