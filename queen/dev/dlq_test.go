package dev

import (
	"strings"
	"testing"
	"time"
)

// deadLetterHead pops q for group and dead-letters the span's first
// message with reason; it returns the pop.
func (e *env) deadLetterHead(q, group, reason string) *popAnswer {
	e.t.Helper()
	a := e.pop("/api/v1/pop/queue/" + q + "?consumerGroup=" + group + "&batch=1")
	m := a.Messages[0]
	res := e.ack(`{"transactionId":"` + m.TransactionID + `","partitionId":"` + m.PartitionID + `","consumerGroup":"` + group + `","status":"dlq","leaseId":"` + a.LeaseID + `","error":"` + reason + `"}`)
	if !res[0].DLQ {
		e.t.Fatalf("not dead-lettered: %+v", res)
	}
	return a
}

func TestDLQListAndPurge(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "0", 3)
	e.pushN("r", "0", 1)
	a := e.deadLetterHead("q", "g1", "boom")
	e.deadLetterHead("q", "g2", "")
	e.deadLetterHead("r", "g1", "x")
	rows := dlqList(t, e, "?queue=q&consumerGroup=g1")
	if len(rows) != 1 || rows[0]["transactionId"] != a.Messages[0].TransactionID || rows[0]["partitionId"] != a.PartitionID ||
		rows[0]["queue"] != "q" || rows[0]["partition"] != "0" || rows[0]["errorMessage"] != "boom" || rows[0]["retryCount"] != 0.0 ||
		rows[0]["producerSub"] != nil || len(rows[0]["id"].(string)) != 36 {
		t.Fatalf("rows %v", rows)
	}
	if d, ok := rows[0]["data"].(map[string]any); !ok || d["i"] != 0.0 {
		t.Fatalf("data %v", rows[0]["data"])
	}
	if _, err := time.Parse(time.RFC3339, rows[0]["failedAt"].(string)); err != nil {
		t.Fatal(err)
	}
	if rows := dlqList(t, e, "?queue=q&consumerGroup=g2"); len(rows) != 1 || rows[0]["errorMessage"] != "Retries exhausted" {
		t.Fatalf("a dlq nack without error: %v", rows)
	}
	if rows := dlqList(t, e, ""); len(rows) != 3 {
		t.Fatalf("all: %v", rows)
	}
	if rows := dlqList(t, e, "?limit=1&offset=2"); len(rows) != 1 {
		t.Fatalf("paged: %v", rows)
	}
	st, raw, _ := e.do("GET", "/api/v1/dlq?limit=2", "", "")
	if v := wantStatus(t, st, raw, 200); num(field(v, "total")) != 2 || num(field(v, "pagination", "limit")) != 2 || num(field(v, "pagination", "offset")) != 0 {
		t.Fatalf("page fields: %s", raw)
	}
	st, raw, _ = e.do("DELETE", "/api/v1/dlq", "", "")
	if v := wantStatus(t, st, raw, 400); field(v, "error") != "queue is required" {
		t.Fatalf("purge without queue: %s", raw)
	}
	st, raw, _ = e.do("DELETE", "/api/v1/dlq?queue=q&consumerGroup=g2", "", "")
	if v := wantStatus(t, st, raw, 200); num(field(v, "deleted")) != 1 || field(v, "consumerGroup") != "g2" {
		t.Fatalf("purge g2: %s", raw)
	}
	st, raw, _ = e.do("DELETE", "/api/v1/dlq?queue=q", "", "")
	if v := wantStatus(t, st, raw, 200); num(field(v, "deleted")) != 1 || field(v, "consumerGroup") != nil {
		t.Fatalf("purge q: %s", raw)
	}
	if rows := dlqList(t, e, ""); len(rows) != 1 || rows[0]["queue"] != "r" {
		t.Fatalf("after purges: %v", rows)
	}
}

func TestDLQReplayAndRetry(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "0", 2)
	a := e.deadLetterHead("q", "g1", "boom")
	row := dlqList(t, e, "?consumerGroup=g1")[0]
	id := row["id"].(string)
	for _, body := range []string{`{"queue":""}`, `{"partition":"  "}`, `[1]`, `null`, `nope`} {
		st, raw := e.post("/api/v1/dlq/"+id+"/replay", body)
		if v := wantStatus(t, st, raw, 400); field(v, "success") != false {
			t.Fatalf("%s: %s", body, raw)
		}
	}
	st, raw := e.post("/api/v1/dlq/"+id+"/replay", `{"queue":" elsewhere "}`)
	v := wantStatus(t, st, raw, 200)
	if field(v, "result") != "moved" || field(v, "queue") != "elsewhere" || field(v, "partition") != "0" || field(v, "consumerGroup") != "g1" ||
		field(v, "dlqId") != id || field(v, "originalTransactionId") != a.Messages[0].TransactionID || field(v, "dlqRowRemoved") != true ||
		field(v, "replayedAs", "transaction_id") != "dlq:"+id || field(v, "replayedAs", "status") != "queued" || num(field(v, "replayedAs", "offset")) != 0 {
		t.Fatalf("replay: %s", raw)
	}
	if b := e.pop("/api/v1/pop/queue/elsewhere?autoAck=true"); b.datas() != `0:{"i":0}` || b.Messages[0].TransactionID != "dlq:"+id {
		t.Fatalf("replayed message: %+v", b)
	}
	st, raw = e.post("/api/v1/dlq/"+id+"/replay", "")
	if v := wantStatus(t, st, raw, 404); field(v, "result") != "gone" || field(v, "dlqId") != id {
		t.Fatalf("second replay: %s", raw)
	}

	// Two groups dead-letter the same message; retry replays the newest
	// row in place and the other group's stays.
	clk := newFakeClock()
	e = newEnv(t, Options{Now: clk.Now})
	e.pushN("q", "0", 1)
	e.deadLetterHead("q", "old", "")
	clk.Advance(time.Second)
	a = e.deadLetterHead("q", "new", "")
	m := a.Messages[0]
	st, raw = e.post("/api/v1/messages/"+m.PartitionID+"/"+m.TransactionID+"/retry", "")
	if v := wantStatus(t, st, raw, 200); field(v, "consumerGroup") != "new" || field(v, "queue") != "q" || num(field(v, "replayedAs", "offset")) != 1 {
		t.Fatalf("retry: %s", raw)
	}
	if rows := dlqList(t, e, ""); len(rows) != 1 || rows[0]["consumerGroup"] != "old" {
		t.Fatalf("left: %v", rows)
	}
	st, raw = e.post("/api/v1/messages/"+m.PartitionID+"/nope/retry", "")
	if v := wantStatus(t, st, raw, 404); field(v, "error") != "Message not found" || field(v, "transactionId") != "nope" {
		t.Fatalf("retry unknown: %s", raw)
	}
}

// A row dead-lettered again at the same place (after a seek back) has the
// same id; replaying it while the first replay is in the dedup window is
// a duplicate: nothing written, the row kept.
func TestDLQReplayDuplicate(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "0", 1)
	e.deadLetterHead("q", "g", "")
	id := dlqList(t, e, "")[0]["id"].(string)
	if st, raw := e.post("/api/v1/dlq/"+id+"/replay", ""); st != 200 {
		t.Fatalf("%d %s", st, raw)
	}
	st, raw := e.post("/api/v1/consumer-groups/g/queues/q/seek", `{"timestamp":"2000-01-01T00:00:00Z"}`)
	wantStatus(t, st, raw, 200)
	e.deadLetterHead("q", "g", "")
	st, raw = e.post("/api/v1/dlq/"+id+"/replay", "")
	v := wantStatus(t, st, raw, 200)
	if field(v, "result") != "duplicate" || field(v, "dlqRowRemoved") != false || num(field(v, "replayedAs", "offset")) != 1 ||
		field(v, "replayedAs", "message_id") != "00000000-0000-0000-0000-000000000000" {
		t.Fatalf("duplicate: %s", raw)
	}
	if rows := dlqList(t, e, ""); len(rows) != 1 {
		t.Fatalf("the row went: %v", rows)
	}
}

// Deleting a queue deletes its cursors, their lease index rows and its
// dead letters with it.
func TestDeleteQueueDropsConsumeRows(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "0", 3)
	e.deadLetterHead("q", "g", "")
	e.pop("/api/v1/pop/queue/q?consumerGroup=h&leaseSeconds=300")
	count := func() map[byte]int {
		n := map[byte]int{}
		for _, kind := range []byte{kindCursor, kindLease, kindDLQ, kindSub} {
			if err := e.b.scan([]byte{kind}, func(k, v []byte) error { n[kind]++; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	if n := count(); n[kindCursor] != 2 || n[kindLease] != 1 || n[kindDLQ] != 1 || n[kindSub] != 2 {
		t.Fatalf("before: %v", n)
	}
	if st, raw, _ := e.do("DELETE", "/api/v1/resources/queues/q", "", ""); st != 200 || !strings.Contains(string(raw), `"deleted":true`) {
		t.Fatalf("%d %s", st, raw)
	}
	if n := count(); len(n) != 0 {
		t.Fatalf("left behind: %v", n)
	}
}

// The DLQ and group routes are per tenant: another tenant's rows are
// neither listed nor replayable (404, as a row that never existed), nor
// seen by its group views; the writes need read-write.
func TestConsumeRoutesTenancy(t *testing.T) {
	toks, err := ParseTokens("tokA=tenantA,tokB=tenantB,tokR=tenantA:ro")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Options{Tokens: toks})
	st, raw, _ := e.do("POST", "/api/v1/push", "Bearer tokA", `{"items":[{"queue":"q","partition":"0","payload":1}]}`)
	wantStatus(t, st, raw, 201)
	st, raw, _ = e.do("GET", "/api/v1/pop/queue/q?consumerGroup=g", "Bearer tokA", "")
	v := wantStatus(t, st, raw, 200)
	ack := `{"transactionId":"` + field(v, "messages", 0, "transactionId").(string) + `","partitionId":"` + field(v, "partitionId").(string) + `","consumerGroup":"g","status":"dlq"}`
	st, raw, _ = e.do("POST", "/api/v1/ack", "Bearer tokA", ack)
	wantStatus(t, st, raw, 200)
	st, raw, _ = e.do("GET", "/api/v1/dlq", "Bearer tokR", "")
	v = wantStatus(t, st, raw, 200)
	id, _ := field(v, "messages", 0, "id").(string)
	if id == "" {
		t.Fatalf("tenant A's reader: %s", raw)
	}
	for path, want := range map[string]string{"/api/v1/dlq": `"messages":[]`, "/api/v1/consumer-groups/g": `{}`, "/api/v1/consumer-groups/lagging?minLagSeconds=-1": `[]`} {
		if st, raw, _ := e.do("GET", path, "Bearer tokB", ""); st != 200 || !strings.Contains(string(raw), want) {
			t.Errorf("tenant B %s: %d %s", path, st, raw)
		}
	}
	if st, raw, _ := e.do("POST", "/api/v1/dlq/"+id+"/replay", "Bearer tokB", ""); st != 404 {
		t.Errorf("tenant B replays A's row: %d %s", st, raw)
	}
	if st, raw, _ := e.do("POST", "/api/v1/consumer-groups/g/subscription", "Bearer tokB", `{"subscriptionTimestamp":"2000-01-01T00:00:00Z"}`); st != 200 ||
		!strings.Contains(string(raw), `"rowsUpdated":0`) {
		t.Errorf("tenant B moves A's subscription: %d %s", st, raw)
	}
	for _, c := range [][2]string{{"POST", "/api/v1/dlq/" + id + "/replay"}, {"DELETE", "/api/v1/dlq?queue=q"}, {"DELETE", "/api/v1/consumer-groups/g"},
		{"POST", "/api/v1/consumer-groups/g/queues/q/seek"}, {"POST", "/api/v1/consumer-groups/g/subscription"}} {
		if st, raw, _ := e.do(c[0], c[1], "Bearer tokR", `{"toEnd":true}`); st != 403 {
			t.Errorf("read-only %s %s: %d %s", c[0], c[1], st, raw)
		}
	}
	if st, raw, _ := e.do("POST", "/api/v1/dlq/"+id+"/replay", "Bearer tokA", ""); st != 200 {
		t.Errorf("tenant A replays: %d %s", st, raw)
	}
}
