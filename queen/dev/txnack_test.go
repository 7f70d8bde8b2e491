package dev

import (
	"encoding/json"
	"testing"
)

// Ack operations in POST /api/v1/transaction (queen-api.md §8): they take
// flat slots in request order beside the push items, commit with the
// records and the KV rider, and a rejected one rolls the whole unit back.
func TestTxnAckOps(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("in", "0", 2)
	a := e.pop("/api/v1/pop/queue/in?consumerGroup=g&batch=2&leaseSeconds=60")
	ackOp := func(m popMsg, lease string) string {
		b, _ := json.Marshal(map[string]string{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "consumerGroup": "g", "status": "completed", "leaseId": lease})
		return string(b)
	}
	push := `{"type":"push","items":[{"queue":"out","partition":"0","payload":{"x":1}}]}`
	kv := `"kv":[{"op":"put","ns":"n","key":"k","value":1,"forever":true}]`

	before := e.b.Mutations()
	st, raw := e.post("/api/v1/transaction", `{"operations":[`+push+`,`+ackOp(a.Messages[0], "stale")+`],`+kv+`}`)
	v := wantStatus(t, st, raw, 200)
	if field(v, "success") != false || field(v, "reason") != "ack_rejected" || e.b.Mutations() != before {
		t.Fatalf("rejected ack: %s", raw)
	}
	if b := e.pop("/api/v1/pop/queue/out?autoAck=true"); b != nil {
		t.Fatalf("the push of a rolled-back unit: %s", b.datas())
	}

	st, raw = e.post("/api/v1/transaction", `{"operations":[`+ackOp(a.Messages[0], a.LeaseID)+`,`+push+`,`+ackOp(a.Messages[1], a.LeaseID)+`],`+kv+`}`)
	v = wantStatus(t, st, raw, 200)
	res := field(v, "results").([]any)
	if field(v, "success") != true || len(res) != 4 ||
		field(res[0], "type") != "ack" || num(field(res[0], "index")) != 0 || field(res[0], "success") != true || field(res[0], "transactionId") != a.Messages[0].TransactionID ||
		field(res[0], "dlq") != false || field(res[0], "error") != nil ||
		field(res[1], "type") != "push" || num(field(res[1], "index")) != 1 ||
		field(res[2], "type") != "ack" || num(field(res[2], "index")) != 2 ||
		field(res[3], "type") != "kv" || num(field(res[3], "index")) != 3 || num(field(res[3], "opIndex")) != 0 {
		t.Fatalf("committed: %s", raw)
	}
	if b := e.pop("/api/v1/pop/queue/in?consumerGroup=g"); b != nil {
		t.Fatalf("acked span popped again: %s", b.datas())
	}
	if b := e.pop("/api/v1/pop/queue/out?autoAck=true"); b.datas() != `0:{"x":1}` {
		t.Fatalf("pushed record: %s", b.datas())
	}
}
