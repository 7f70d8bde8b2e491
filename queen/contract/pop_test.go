package contract

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

type popMsg struct {
	ID, TransactionID, PartitionID, Partition, LeaseID, ConsumerGroup, CreatedAt string
	TraceID, ProducerSub                                                         any
	Data                                                                         json.RawMessage
}

type popAnswer struct {
	Success                                               bool
	Queue, Partition, PartitionID, LeaseID, ConsumerGroup string
	Messages                                              []popMsg
	PartitionsClaimed                                     int
}

// pop GETs path on p; nil for a 204.
func pop(t testing.TB, p *devProc, path string) *popAnswer {
	t.Helper()
	r := p.raw(t, "GET", path, "", "")
	if r.Status == http.StatusNoContent {
		return nil
	}
	if r.Status != 200 {
		t.Fatalf("pop %s: %d %s", path, r.Status, r.Body)
	}
	var a popAnswer
	if err := json.Unmarshal(r.Body, &a); err != nil {
		t.Fatalf("pop %s: %v %s", path, err, r.Body)
	}
	return &a
}

func (a *popAnswer) txIDs() string {
	if a == nil {
		return "204"
	}
	var ids []string
	for _, m := range a.Messages {
		ids = append(ids, m.TransactionID)
	}
	return strings.Join(ids, ",")
}

func ackRaw(t testing.TB, p *devProc, path string, body any) []map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	r := p.raw(t, "POST", path, "", string(b))
	if r.Status != 200 {
		t.Fatalf("%s: %d %s", path, r.Status, r.Body)
	}
	var out []map[string]any
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatalf("%s: %v %s", path, err, r.Body)
	}
	return out
}

func pushTx(t testing.TB, c *queen.Client, queue string, ids ...string) {
	t.Helper()
	items := make([]queen.PushItem, len(ids))
	for i, id := range ids {
		items[i] = queen.PushItem{Queue: queue, Partition: "0", TransactionID: id, Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	must[[]queen.PushResult](t)(c.Push(ctx, items))
}

// queen-api-consume.md §2–§4 against the real process: what a Kafka
// producer wrote is popped by a native consumer group with a lease, a
// failed nack redelivers, a batch ack of the span's last message commits
// it (implicit ack), and the answers carry the contract's fields.
func TestPopAckContract(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("jobs")
	pushTx(t, c, q, "t-1", "t-2", "t-3")
	a := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup=billing&batch=2&leaseSeconds=60")
	if a.txIDs() != "t-1,t-2" || !a.Success || a.Queue != q || a.Partition != "0" || a.ConsumerGroup != "billing" || a.PartitionsClaimed != 1 ||
		a.LeaseID == "" || a.PartitionID == "" || string(a.Messages[0].Data) != `{"n":0}` || a.Messages[0].TraceID != nil || a.Messages[0].ProducerSub != nil ||
		a.Messages[1].LeaseID != a.LeaseID || a.Messages[1].ConsumerGroup != "billing" || a.Messages[1].PartitionID != a.PartitionID {
		t.Fatalf("pop: %+v", a)
	}
	if _, err := time.Parse(time.RFC3339Nano, a.Messages[0].CreatedAt); err != nil {
		t.Fatalf("createdAt %q: %v", a.Messages[0].CreatedAt, err)
	}
	if b := pop(t, shared, "/api/v1/pop/queue/"+q+"/partition/0?consumerGroup=billing"); b != nil {
		t.Fatalf("leased span popped twice: %s", b.txIDs())
	}
	r := ackRaw(t, shared, "/api/v1/ack", map[string]any{"transactionId": "t-1", "partitionId": a.PartitionID, "status": "failed", "consumerGroup": "billing", "leaseId": a.LeaseID, "error": "boom"})
	want := []map[string]any{{"index": 0.0, "transactionId": "t-1", "success": true, "error": nil, "leaseReleased": true, "dlq": false, "noop": false}}
	jsonEq(t, must[[]byte](t)(json.Marshal(r)), must[[]byte](t)(json.Marshal(want)))
	a = pop(t, shared, "/api/v1/pop/queue/"+q+"/partition/0?consumerGroup=billing&batch=2")
	if a.txIDs() != "t-1,t-2" {
		t.Fatalf("redelivery: %s", a.txIDs())
	}
	r = ackRaw(t, shared, "/api/v1/ack/batch", map[string]any{"consumerGroup": "billing", "acknowledgments": []map[string]any{
		{"transactionId": "t-2", "partitionId": a.PartitionID, "status": "completed", "leaseId": a.LeaseID}}})
	if len(r) != 1 || r[0]["success"] != true || r[0]["leaseReleased"] != true {
		t.Fatalf("batch ack: %v", r)
	}
	if a = pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup=billing"); a.txIDs() != "t-3" {
		t.Fatalf("after the implicit ack: %s", a.txIDs())
	}
	// The group is listed with kind "queen".
	rows := groupRows(t, shared, "")
	var row map[string]any
	_ = json.Unmarshal(rows["billing@"+q], &row)
	if row["kind"] != "queen" || row["totalLag"] != 1.0 || row["state"] != "Stable" {
		t.Fatalf("group row: %s", rows["billing@"+q])
	}
	// Lease extension answers 200 either way.
	ext := shared.raw(t, "POST", "/api/v1/lease/"+a.LeaseID+"/extend", "", `{"seconds":120}`)
	var e map[string]any
	if err := json.Unmarshal(ext.Body, &e); ext.Status != 200 || err != nil || e["success"] != true || e["renewed"] != 1.0 || e["newExpiresAt"] == nil {
		t.Fatalf("extend: %d %s", ext.Status, ext.Body)
	}
	ext = shared.raw(t, "POST", "/api/v1/lease/unknown/extend", "", ``)
	if err := json.Unmarshal(ext.Body, &e); ext.Status != 200 || err != nil || e["success"] != false || e["newExpiresAt"] != nil {
		t.Fatalf("extend unknown: %d %s", ext.Status, ext.Body)
	}
	if r := shared.raw(t, "POST", "/api/v1/ack", "", `{"transactionId":`); r.Status != 400 || !strings.Contains(string(r.Body), "bad body") {
		t.Fatalf("malformed ack: %d %s", r.Status, r.Body)
	}
}

// Cursors and leases are stored like every other write: acknowledged
// after their fsync, so a kill -9 loses neither an ack nor a lease.
func TestPopStateSurvivesKill(t *testing.T) {
	p := startDev(t, "", nil)
	c := p.client(t, "")
	pushTx(t, c, "q", "a", "b", "c")
	a := pop(t, p, "/api/v1/pop/queue/q?consumerGroup=g&batch=1")
	ackRaw(t, p, "/api/v1/ack", map[string]any{"transactionId": "a", "partitionId": a.PartitionID, "consumerGroup": "g", "leaseId": a.LeaseID})
	b := pop(t, p, "/api/v1/pop/queue/q?consumerGroup=g&batch=1&leaseSeconds=300")
	if b.txIDs() != "b" {
		t.Fatalf("second pop: %s", b.txIDs())
	}
	p.Kill()
	if err := p.launch(); err != nil {
		t.Fatal(err)
	}
	if x := pop(t, p, "/api/v1/pop/queue/q?consumerGroup=g"); x != nil {
		t.Fatalf("the lease was lost: %s", x.txIDs())
	}
	r := ackRaw(t, p, "/api/v1/ack", map[string]any{"transactionId": "b", "partitionId": b.PartitionID, "consumerGroup": "g", "leaseId": b.LeaseID})
	if r[0]["success"] != true || r[0]["leaseReleased"] != true {
		t.Fatalf("ack after restart: %v", r)
	}
	if x := pop(t, p, "/api/v1/pop/queue/q?consumerGroup=g"); x.txIDs() != "c" {
		t.Fatalf("after restart: %s", x.txIDs())
	}
}

// wait=true is woken by a push to the queue.
func TestPopLongPollContract(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("lp")
	must[*queen.ConfigureResult](t)(c.Configure(ctx, q, nil))
	type result struct {
		status int
		a      popAnswer
		err    error
	}
	done := make(chan result, 1)
	go func() { // no t.Fatal off the test goroutine
		var r result
		resp, err := http.Get(shared.url + "/api/v1/pop/queue/" + q + "?wait=true&timeout=20000&autoAck=true")
		if err == nil {
			r.status = resp.StatusCode
			r.err = json.NewDecoder(resp.Body).Decode(&r.a)
			resp.Body.Close()
		}
		if err != nil {
			r.err = err
		}
		done <- r
	}()
	time.Sleep(100 * time.Millisecond)
	pushTx(t, c, q, "w-1")
	select {
	case r := <-done:
		if r.err != nil || r.status != 200 || r.a.txIDs() != "w-1" || r.a.LeaseID != "" {
			t.Fatalf("woken pop: %d %v %+v", r.status, r.err, r.a)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("long poll not woken by a push")
	}
}
