package contract

import (
	"encoding/json"
	"net/url"
	"testing"
)

// dlqRows is GET /api/v1/dlq with query, checked to be {messages:[…],
// pagination, total}.
func dlqRows(t testing.TB, p *devProc, query string) []map[string]any {
	t.Helper()
	r := p.raw(t, "GET", "/api/v1/dlq"+query, "", "")
	var body struct {
		Messages   []map[string]any
		Pagination struct{ Limit, Offset *int }
		Total      *int
	}
	if err := json.Unmarshal(r.Body, &body); r.Status != 200 || err != nil || body.Total == nil || *body.Total != len(body.Messages) ||
		body.Pagination.Limit == nil || body.Pagination.Offset == nil {
		t.Fatalf("dlq %s: %d %v %s", query, r.Status, err, r.Body)
	}
	return body.Messages
}

// queen-api-consume.md §4–§5 against the real process: a failed nack past
// the retry budget files the head message as a dead letter with the
// nack's error and the retries spent; the DLQ lists it, a replay re-pushes
// the snapshot and removes the row, message retry replays by address, and
// a purge takes a queue's rows.
func TestDLQContract(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("dead")
	must[any](t)(c.Configure(ctx, q, map[string]any{"retryLimit": 1}))
	pushTx(t, c, q, "d-1", "d-2")
	var a *popAnswer
	for i := 0; i < 2; i++ {
		a = pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup=g&batch=1")
		ackRaw(t, shared, "/api/v1/ack", map[string]any{"transactionId": "d-1", "partitionId": a.PartitionID, "consumerGroup": "g", "leaseId": a.LeaseID, "status": "failed", "error": "boom"})
	}
	rows := dlqRows(t, shared, "?queue="+q)
	if len(rows) != 1 || rows[0]["transactionId"] != "d-1" || rows[0]["errorMessage"] != "boom" || rows[0]["retryCount"] != 1.0 ||
		rows[0]["consumerGroup"] != "g" || rows[0]["queue"] != q || rows[0]["partition"] != "0" || rows[0]["partitionId"] != a.PartitionID {
		t.Fatalf("dlq rows: %v", rows)
	}
	if d, _ := rows[0]["data"].(map[string]any); d["n"] != 0.0 {
		t.Fatalf("snapshot: %v", rows[0]["data"])
	}
	if a := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup=g&autoAck=true"); a.txIDs() != "d-2" {
		t.Fatalf("the cursor moves past a dead letter: %s", a.txIDs())
	}
	id := rows[0]["id"].(string)
	r := shared.raw(t, "POST", "/api/v1/dlq/"+id+"/replay", "", "")
	m := r.json(t)
	if r.Status != 200 || m["result"] != "moved" || m["dlqRowRemoved"] != true || m["originalTransactionId"] != "d-1" {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	if rows := dlqRows(t, shared, "?queue="+q); len(rows) != 0 {
		t.Fatalf("replayed row kept: %v", rows)
	}
	if a := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup=other&autoAck=true"); a.txIDs() != "d-1,d-2,dlq:"+id {
		t.Fatalf("the log after a replay: %s", a.txIDs())
	}
	if r := shared.raw(t, "POST", "/api/v1/dlq/"+id+"/replay", "", ""); r.Status != 404 || r.json(t)["result"] != "gone" {
		t.Fatalf("replay twice: %d %s", r.Status, r.Body)
	}

	// dlq status: at once, bypassing the budget; retried by address.
	pushTx(t, c, q, "d-3")
	a = pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup=g")
	ackRaw(t, shared, "/api/v1/ack", map[string]any{"transactionId": "d-3", "partitionId": a.PartitionID, "consumerGroup": "g", "leaseId": a.LeaseID, "status": "dlq"})
	r = shared.raw(t, "POST", "/api/v1/messages/"+a.PartitionID+"/d-3/retry", "", "")
	if m := r.json(t); r.Status != 200 || m["consumerGroup"] != "g" || m["result"] != "moved" {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	if r := shared.raw(t, "POST", "/api/v1/messages/"+a.PartitionID+"/d-3/retry", "", ""); r.Status != 404 || r.json(t)["error"] != "Message not found" {
		t.Fatalf("retry twice: %d %s", r.Status, r.Body)
	}

	a = pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup=g&batch=1")
	ackRaw(t, shared, "/api/v1/ack", map[string]any{"transactionId": a.Messages[0].TransactionID, "partitionId": a.PartitionID, "consumerGroup": "g", "leaseId": a.LeaseID, "status": "dlq"})
	if r := shared.raw(t, "DELETE", "/api/v1/dlq", "", ""); r.Status != 400 || r.json(t)["error"] != "queue is required" {
		t.Fatalf("purge without queue: %d %s", r.Status, r.Body)
	}
	r = shared.raw(t, "DELETE", "/api/v1/dlq?queue="+url.QueryEscape(q), "", "")
	if m := r.json(t); r.Status != 200 || m["deleted"] != 1.0 || m["success"] != true {
		t.Fatalf("purge: %d %s", r.Status, r.Body)
	}
}
