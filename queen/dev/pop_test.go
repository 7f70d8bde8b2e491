package dev

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

type popMsg struct {
	ID, TransactionID, PartitionID, Partition, LeaseID, ConsumerGroup, CreatedAt string
	Data                                                                         json.RawMessage
}

type popAnswer struct {
	Success                                               bool
	Queue, Partition, PartitionID, LeaseID, ConsumerGroup string
	Messages                                              []popMsg
	PartitionsClaimed                                     int
}

// pop GETs path; a 204 is nil.
func (e *env) pop(path string) *popAnswer {
	e.t.Helper()
	st, raw, _ := e.do("GET", path, "", "")
	if st == http.StatusNoContent {
		return nil
	}
	if st != 200 {
		e.t.Fatalf("pop %s: %d %s", path, st, raw)
	}
	var a popAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		e.t.Fatalf("pop %s: %v %s", path, err, raw)
	}
	return &a
}

func (a *popAnswer) datas() string {
	if a == nil {
		return "204"
	}
	var parts []string
	for _, m := range a.Messages {
		parts = append(parts, m.Partition+":"+string(m.Data))
	}
	return strings.Join(parts, ",")
}

type ackOut struct {
	Index                             int
	TransactionID                     string
	Success, LeaseReleased, DLQ, Noop bool
	Error                             *string
}

func (e *env) ack(body string) []ackOut {
	e.t.Helper()
	path := "/api/v1/ack"
	if strings.Contains(body, "acknowledgments") {
		path += "/batch"
	}
	st, raw := e.post(path, body)
	if st != 200 {
		e.t.Fatalf("ack: %d %s", st, raw)
	}
	var out []ackOut
	if err := json.Unmarshal(raw, &out); err != nil {
		e.t.Fatalf("ack: %v %s", err, raw)
	}
	return out
}

func ackBody(group string, m popMsg, status, lease string) string {
	b, _ := json.Marshal(map[string]string{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": status, "consumerGroup": group, "leaseId": lease})
	return string(b)
}

// §2–§4 walk: pop leases a span per (partition, group); the same group
// skips a leased partition, another group reads independently; a partial
// ack keeps the lease, acking the last message releases it (implicit ack);
// an expired lease redelivers from the cursor.
func TestPopLeaseAck(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	if a := e.pop("/api/v1/pop/queue/orders?consumerGroup=g"); a != nil {
		t.Fatalf("unknown queue: %+v", a)
	}
	e.pushN("orders", "0", 5)
	a := e.pop("/api/v1/pop/queue/orders?consumerGroup=g&batch=3&leaseSeconds=30")
	if a.datas() != `0:{"i":0},0:{"i":1},0:{"i":2}` || !a.Success || a.Queue != "orders" || a.Partition != "0" || a.ConsumerGroup != "g" ||
		a.LeaseID == "" || a.PartitionID == "" || a.PartitionsClaimed != 1 || a.Messages[0].LeaseID != a.LeaseID || a.Messages[0].PartitionID != a.PartitionID ||
		a.Messages[0].CreatedAt != "2026-08-28T09:15:00.123Z" || a.Messages[0].ID == "" || a.Messages[0].TransactionID != a.Messages[0].ID {
		t.Fatalf("first pop: %+v", a)
	}
	if b := e.pop("/api/v1/pop/queue/orders?consumerGroup=g"); b != nil {
		t.Fatalf("leased partition popped again: %s", b.datas())
	}
	if b := e.pop("/api/v1/pop/queue/orders/partition/0?consumerGroup=other&batch=2"); b.datas() != `0:{"i":0},0:{"i":1}` {
		t.Fatalf("other group: %s", b.datas())
	}
	// Partial ack: the lease stays.
	r := e.ack(ackBody("g", a.Messages[0], "completed", a.LeaseID))
	if len(r) != 1 || !r[0].Success || r[0].LeaseReleased || r[0].Index != 0 || r[0].TransactionID != a.Messages[0].TransactionID || r[0].Error != nil {
		t.Fatalf("partial ack: %+v", r)
	}
	if b := e.pop("/api/v1/pop/queue/orders?consumerGroup=g"); b != nil {
		t.Fatalf("still leased: %s", b.datas())
	}
	// Expiry redelivers from committed+1, nothing acked by it.
	clk.Advance(31 * time.Second)
	b := e.pop("/api/v1/pop/queue/orders?consumerGroup=g&batch=2")
	if b.datas() != `0:{"i":1},0:{"i":2}` || b.LeaseID == a.LeaseID {
		t.Fatalf("after expiry: %s", b.datas())
	}
	// The old lease is dead; acking the last message with the new one
	// releases the lease and commits the whole span.
	if r := e.ack(ackBody("g", b.Messages[1], "completed", a.LeaseID)); r[0].Success || r[0].Error == nil || *r[0].Error != errInvalidLease {
		t.Fatalf("stale lease: %+v", r)
	}
	if r := e.ack(ackBody("g", b.Messages[1], "", b.LeaseID)); !r[0].Success || !r[0].LeaseReleased {
		t.Fatalf("last ack: %+v", r)
	}
	if c := e.pop("/api/v1/pop/queue/orders?consumerGroup=g"); c.datas() != `0:{"i":3},0:{"i":4}` {
		t.Fatalf("after commit: %s", c.datas())
	}
	// A repeat completed ack below the cursor, without lease, is a noop;
	// a nack there is refused.
	if r := e.ack(ackBody("g", b.Messages[0], "completed", "")); !r[0].Success || !r[0].Noop {
		t.Fatalf("repeat: %+v", r)
	}
	if r := e.ack(ackBody("g", b.Messages[0], "failed", "")); r[0].Success || *r[0].Error != errAlreadyCommitted {
		t.Fatalf("nack below cursor: %+v", r)
	}
	if r := e.ack(`{"transactionId":"nope","partitionId":"` + a.PartitionID + `","consumerGroup":"g"}`); r[0].Success || *r[0].Error != errUnresolvable {
		t.Fatalf("unknown tx: %+v", r)
	}
	if r := e.ack(`{"transactionId":"x","partitionId":"00000000-0000-0000-0000-000000000000","consumerGroup":"g"}`); r[0].Success || *r[0].Error != errNotOwned {
		t.Fatalf("unknown partition: %+v", r)
	}
	if r := e.ack(ackBody("nobody", a.Messages[0], "", "")); r[0].Success || *r[0].Error != errNoConsumer {
		t.Fatalf("unknown group: %+v", r)
	}
	if st, raw := e.post("/api/v1/ack", `{`); st != 400 || !strings.Contains(string(raw), `"error":"bad body: `) {
		t.Fatalf("bad JSON: %d %s", st, raw)
	}
}

// §4: failed nacks charge the (partition, group) retry budget and
// redeliver from the failed message; past retryLimit that one message
// goes to the dead-letter queue and the cursor moves past it. retry never
// charges; dlq dead-letters at once; completed messages above a failure
// are redelivered.
func TestAckRetryBudgetAndDLQ(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.qc.Configure(ctx(t), "jobs", map[string]any{"retryLimit": 1}); err != nil {
		t.Fatal(err)
	}
	e.pushN("jobs", "0", 4)
	popAll := func() *popAnswer { return e.pop("/api/v1/pop/queue/jobs?consumerGroup=w&batch=2") }
	a := popAll() // 0, 1
	r := e.ack(`{"consumerGroup":"w","acknowledgments":[` + ackBody("", a.Messages[1], "completed", a.LeaseID) + `,` + ackBody("", a.Messages[0], "boom", a.LeaseID) + `]}`)
	if len(r) != 2 || !r[0].Success || !r[1].Success || !r[1].LeaseReleased || r[1].DLQ || r[1].Index != 1 {
		t.Fatalf("first failure: %+v", r)
	}
	a = popAll()
	if a.datas() != `0:{"i":0},0:{"i":1}` {
		t.Fatalf("redelivery: %s", a.datas())
	}
	// retry: released, budget untouched.
	if r := e.ack(ackBody("w", a.Messages[0], "retry", a.LeaseID)); !r[0].LeaseReleased || r[0].DLQ {
		t.Fatalf("retry: %+v", r)
	}
	a = popAll()
	// Second failure exhausts retryLimit 1: message 0 is dead-lettered.
	if r := e.ack(ackBody("w", a.Messages[0], "failed", a.LeaseID)); !r[0].Success || !r[0].DLQ || !r[0].LeaseReleased {
		t.Fatalf("exhausted: %+v", r)
	}
	a = popAll()
	if a.datas() != `0:{"i":1},0:{"i":2}` {
		t.Fatalf("after the dead letter: %s", a.datas())
	}
	if r := e.ack(ackBody("w", a.Messages[0], "dlq", a.LeaseID)); !r[0].DLQ {
		t.Fatalf("dlq: %+v", r)
	}
	if a = popAll(); a.datas() != `0:{"i":2},0:{"i":3}` {
		t.Fatalf("after dlq: %s", a.datas())
	}
	n := 0
	if err := e.b.scan([]byte{kindDLQ}, func(k, v []byte) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("dead letters stored: %d %v", n, err)
	}
}

// autoAck advances the cursor at delivery with no lease; the queue form
// claims up to partitions partitions in one call with one leaseId; no
// consumerGroup is the shared queue-mode cursor; subscriptionMode=new
// starts a new group at the end.
func TestPopForms(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "a", 2)
	e.pushN("q", "b", 2)
	a := e.pop("/api/v1/pop/queue/q?autoAck=true&consumerGroup=auto&batch=10")
	if a.datas() != `a:{"i":0},a:{"i":1}` || a.LeaseID != "" || a.Messages[0].LeaseID != "" {
		t.Fatalf("autoAck: %+v", a)
	}
	if a = e.pop("/api/v1/pop/queue/q?autoAck=true&consumerGroup=auto"); a.datas() != `b:{"i":0},b:{"i":1}` {
		t.Fatalf("autoAck next: %s", a.datas())
	}
	a = e.pop("/api/v1/pop/queue/q?partitions=2&batch=3")
	if a.datas() != `a:{"i":0},a:{"i":1},b:{"i":0}` || a.PartitionsClaimed != 2 || a.Partition != "a" || a.ConsumerGroup != queueModeGroup ||
		a.Messages[2].LeaseID != a.LeaseID || a.Messages[2].PartitionID == a.PartitionID {
		t.Fatalf("two partitions: %+v", a)
	}
	if b := e.pop("/api/v1/pop/queue/q?subscriptionMode=new&consumerGroup=late"); b != nil {
		t.Fatalf("new group read old data: %s", b.datas())
	}
	e.pushN("q", "a", 1)
	if b := e.pop("/api/v1/pop/queue/q?subscriptionMode=new&consumerGroup=late"); b.datas() != `a:{"i":0}` {
		t.Fatalf("new group: %s", b.datas())
	}
	if st, raw, _ := e.do("GET", "/api/v1/pop/queue/q?batch=x", "", ""); st != 400 {
		t.Fatalf("bad batch: %d %s", st, raw)
	}
}

// wait=true parks until a write to the queue (or the timeout, then 204).
func TestPopLongPoll(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("lp", "0", 1)
	e.pop("/api/v1/pop/queue/lp?autoAck=true")
	start := time.Now()
	if a := e.pop("/api/v1/pop/queue/lp?wait=true&timeout=300&autoAck=true"); a != nil {
		t.Fatalf("nothing to pop: %s", a.datas())
	}
	if time.Since(start) < 250*time.Millisecond {
		t.Fatalf("answered before the timeout")
	}
	done := make(chan string, 1)
	go func() { // no t.Fatal off the test goroutine
		resp, err := http.Get(e.srv.URL + "/api/v1/pop/queue/lp?wait=true&timeout=20000&autoAck=true")
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		var a popAnswer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			done <- err.Error()
			return
		}
		done <- a.datas()
	}()
	time.Sleep(50 * time.Millisecond)
	e.pushN("lp", "0", 1)
	select {
	case got := <-done:
		if got != `0:{"i":0}` {
			t.Fatalf("woken pop: %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll not woken by the write")
	}
}

// §3 renew: every live lease of the id, never shortened, never revived;
// always 200.
func TestLeaseExtend(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("x", "0", 1)
	a := e.pop("/api/v1/pop/queue/x?leaseSeconds=10")
	extend := func(id, body string) map[string]any {
		st, raw := e.post("/api/v1/lease/"+id+"/extend", body)
		if st != 200 {
			t.Fatalf("extend: %d %s", st, raw)
		}
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return m
	}
	m := extend(a.LeaseID, `{"seconds":100}`)
	want := clk.Now().Add(100 * time.Second).UTC().Format(tsMicros)
	if m["success"] != true || m["renewed"] != float64(1) || m["newExpiresAt"] != want || m["expiresAt"] != want || m["lease_expires_at"] != want || m["leaseId"] != a.LeaseID {
		t.Fatalf("extend: %v (want %s)", m, want)
	}
	if m := extend(a.LeaseID, `{"seconds":5}`); m["newExpiresAt"] != want { // never shortens
		t.Fatalf("shortened: %v", m)
	}
	clk.Advance(50 * time.Second)
	if b := e.pop("/api/v1/pop/queue/x"); b != nil {
		t.Fatalf("extended lease not held: %s", b.datas())
	}
	clk.Advance(51 * time.Second)
	if m := extend(a.LeaseID, ``); m["success"] != false || m["renewed"] != float64(0) || m["newExpiresAt"] != nil {
		t.Fatalf("expired lease revived: %v", m)
	}
	if m := extend("nope", `x`); m["success"] != false {
		t.Fatalf("unknown: %v", m)
	}
}

// §6: pop cursors are kind "queen" rows: lag = end − (committed+1), a
// group that never consumed is "Dead"; one name in both stores is two
// rows; a queen row carries the subscription its first pop registered.
func TestConsumerGroupsQueenRows(t *testing.T) {
	e := newEnv(t, Options{Now: newFakeClock().Now})
	e.pushN("orders", "0", 10)
	a := e.pop("/api/v1/pop/queue/orders?consumerGroup=twin&batch=5")
	e.ack(ackBody("twin", a.Messages[4], "completed", a.LeaseID)) // committed 4
	e.pop("/api/v1/pop/queue/orders?consumerGroup=idle&batch=1")  // leased, never acked
	e.kv(commit("twin", "orders", 0, 8))
	e.wantGroups("", `[
	 {"name":"idle","topics":["orders"],"queueName":"orders","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":10,"maxTimeLag":0,"state":"Dead","storage":"segments","subscriptionMode":"all","subscriptionTimestamp":"1970-01-01T00:00:00.000Z","subscriptionCreatedAt":"2026-08-28T09:15:00.123Z","conflation":false,"kind":"queen"},
	 {"name":"twin","topics":["orders"],"queueName":"orders","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":5,"maxTimeLag":0,"state":"Stable","storage":"segments","subscriptionMode":"all","subscriptionTimestamp":"1970-01-01T00:00:00.000Z","subscriptionCreatedAt":"2026-08-28T09:15:00.123Z","conflation":false,"kind":"queen"},
	 {"name":"twin","topics":["orders"],"queueName":"orders","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":2,"maxTimeLag":0,`+kafkaRowTail+`]`)
}

// Property: under random pops, acks (completed, failed, retry, dlq, on
// random messages of the span), lease expiries and extensions, a group's
// pops start at a position that never goes back, are consecutive, never
// redeliver a dead-lettered message, and draining with completed acks ends
// with every message either consumed or dead-lettered.
func TestPopAckProperty(t *testing.T) {
	const n = 30
	for seed := uint64(1); seed <= 10; seed++ {
		rng := rand.New(rand.NewPCG(seed, 4))
		clk := newFakeClock()
		e := newEnv(t, Options{Now: clk.Now})
		if _, err := e.qc.Configure(ctx(t), "p", map[string]any{"retryLimit": 2}); err != nil {
			t.Fatal(err)
		}
		e.pushN("p", "0", n)
		index := func(m popMsg) int {
			var v struct{ I int }
			_ = json.Unmarshal(m.Data, &v)
			return v.I
		}
		lastStart, dead, seen := -1, map[int]bool{}, map[int]bool{}
		statuses := []string{"completed", "failed", "retry", "dlq", "boom"}
		for step := 0; step < 400; step++ {
			a := e.pop("/api/v1/pop/queue/p?consumerGroup=g&leaseSeconds=10&batch=" + strconv.Itoa(1+rng.IntN(5)))
			if a == nil {
				if step > 300 {
					break
				}
				clk.Advance(11 * time.Second) // a lease may be held
				continue
			}
			start := index(a.Messages[0])
			if start < lastStart {
				t.Fatalf("seed %d: pop went back from %d to %d", seed, lastStart, start)
			}
			lastStart = start
			for k, m := range a.Messages {
				if index(m) != start+k || dead[index(m)] {
					t.Fatalf("seed %d: span %s (dead %v)", seed, a.datas(), dead)
				}
				seen[index(m)] = true
			}
			draining := step > 300
			switch r := rng.IntN(6); {
			case r == 0 && !draining:
				clk.Advance(11 * time.Second) // let it expire
			case r == 1 && !draining:
				e.post("/api/v1/lease/"+a.LeaseID+"/extend", `{"seconds":5}`)
			default:
				m := a.Messages[rng.IntN(len(a.Messages))]
				st := "completed"
				if !draining {
					st = statuses[rng.IntN(len(statuses))]
				} else {
					m = a.Messages[len(a.Messages)-1]
				}
				res := e.ack(ackBody("g", m, st, a.LeaseID))
				if !res[0].Success {
					t.Fatalf("seed %d: ack %s of %s: %+v", seed, st, m.TransactionID, res)
				}
				if res[0].DLQ {
					dead[index(m)] = true
				}
				if !res[0].LeaseReleased {
					clk.Advance(11 * time.Second)
				}
			}
		}
		if len(seen) != n {
			t.Fatalf("seed %d: delivered %d of %d", seed, len(seen), n)
		}
		if a := e.pop("/api/v1/pop/queue/p?consumerGroup=g"); a != nil {
			t.Fatalf("seed %d: not drained: %s", seed, a.datas())
		}
	}
}
