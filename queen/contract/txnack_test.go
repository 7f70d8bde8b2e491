package contract

import (
	"encoding/json"
	"testing"
)

// queen-api.md §8 with ack operations: a push and the ack of the message
// it was computed from commit as one unit (flat slots in request order);
// an ack under a stale lease rolls the unit back with reason ack_rejected.
func TestTransactionAckOpsContract(t *testing.T) {
	c := shared.client(t, "")
	in, out := uniq("txin"), uniq("txout")
	pushTx(t, c, in, "x-1")
	a := pop(t, shared, "/api/v1/pop/queue/"+in+"?consumerGroup=g")
	body := func(lease string) string {
		b, _ := json.Marshal(map[string]any{"operations": []map[string]any{
			{"type": "ack", "transactionId": "x-1", "partitionId": a.PartitionID, "consumerGroup": "g", "status": "completed", "leaseId": lease},
			{"type": "push", "items": []map[string]any{{"queue": out, "partition": "0", "payload": map[string]any{"from": "x-1"}}}},
		}})
		return string(b)
	}
	r := shared.raw(t, "POST", "/api/v1/transaction", "", body("0190-stale"))
	if m := r.json(t); r.Status != 200 || m["success"] != false || m["reason"] != "ack_rejected" {
		t.Fatalf("stale lease: %d %s", r.Status, r.Body)
	}
	if f := fetchOne(t, c, out, "0", 0); f.HighWatermark != 0 {
		t.Fatalf("a rolled-back unit stored records: hwm %d", f.HighWatermark)
	}
	r = shared.raw(t, "POST", "/api/v1/transaction", "", body(a.LeaseID))
	var got struct {
		Success bool
		Results []map[string]any
	}
	if err := json.Unmarshal(r.Body, &got); r.Status != 200 || err != nil || !got.Success || len(got.Results) != 2 ||
		got.Results[0]["type"] != "ack" || got.Results[0]["index"] != 0.0 || got.Results[0]["success"] != true || got.Results[0]["dlq"] != false ||
		got.Results[1]["type"] != "push" || got.Results[1]["index"] != 1.0 {
		t.Fatalf("committed: %d %s", r.Status, r.Body)
	}
	if x := pop(t, shared, "/api/v1/pop/queue/"+in+"?consumerGroup=g"); x != nil {
		t.Fatalf("acked in the transaction, popped again: %s", x.txIDs())
	}
	if f := fetchOne(t, c, out, "0", 0); f.HighWatermark != 1 {
		t.Fatalf("pushed in the transaction: hwm %d", f.HighWatermark)
	}
}
