package dev

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// The discovery pop claims across every queue matching namespace and task
// (queue "" in the answer, each message naming its partition), and
// refuses a call naming neither.
func TestPopDiscovery(t *testing.T) {
	e := newEnv(t, Options{})
	c := ctx(t)
	for q, opts := range map[string]map[string]any{
		"a": {"namespace": "billing", "task": "email"},
		"b": {"namespace": "billing", "task": "sms"},
		"c": {"namespace": "other", "task": "email"},
	} {
		if _, err := e.qc.Configure(c, q, opts); err != nil {
			t.Fatal(err)
		}
		e.pushN(q, "0", 1)
	}
	a := e.pop("/api/v1/pop?namespace=billing&consumerGroup=g&partitions=5&leaseSeconds=60")
	if a.Queue != "" || a.PartitionsClaimed != 2 || len(a.Messages) != 2 || a.Messages[0].PartitionID == a.Messages[1].PartitionID ||
		a.PartitionID != a.Messages[0].PartitionID || a.Messages[1].LeaseID != a.LeaseID {
		t.Fatalf("namespace: %+v", a)
	}
	if b := e.pop("/api/v1/pop?namespace=billing&consumerGroup=g"); b != nil {
		t.Fatalf("leased partitions popped again: %s", b.datas())
	}
	// The lease of the discovery pop is acked like any other.
	for _, m := range a.Messages {
		if r := e.ack(ackBody("g", m, "completed", a.LeaseID)); !r[0].Success || !r[0].LeaseReleased {
			t.Fatalf("ack: %+v", r)
		}
	}
	if b := e.pop("/api/v1/pop?task=email&namespace=other&autoAck=true"); b.datas() != `0:{"i":0}` || b.LeaseID != "" {
		t.Fatalf("namespace and task: %+v", b)
	}
	if b := e.pop("/api/v1/pop?task=email&consumerGroup=g2&partitions=1"); b.PartitionsClaimed != 1 || len(b.Messages) != 1 {
		t.Fatalf("task, one partition: %+v", b)
	}
	if b := e.pop("/api/v1/pop?namespace=none"); b != nil {
		t.Fatalf("no match: %+v", b)
	}
	st, raw, _ := e.do(http.MethodGet, "/api/v1/pop?consumerGroup=g", "", "")
	if string(raw) != `{"success":false,"error":"namespace or task is required","messages":[]}` || st != 400 {
		t.Fatalf("no scope: %d %s", st, raw)
	}
}

// A discovery long poll is woken by a push to a matching queue, one
// created after the poll began included.
func TestPopDiscoveryLongPoll(t *testing.T) {
	e := newEnv(t, Options{})
	if _, err := e.qc.Configure(ctx(t), "a", map[string]any{"task": "work"}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"a", "b"} {
		done := make(chan *popAnswer, 1)
		go func() {
			resp, err := http.Get(e.srv.URL + "/api/v1/pop?task=work&wait=true&timeout=10000&autoAck=true")
			var a popAnswer
			if err == nil {
				if resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(&a) == nil {
					done <- &a
				}
				resp.Body.Close()
			}
			close(done)
		}()
		time.Sleep(100 * time.Millisecond)
		if q == "b" {
			if _, err := e.qc.Configure(ctx(t), "b", map[string]any{"task": "work"}); err != nil {
				t.Fatal(err)
			}
		}
		e.pushN(q, "0", 1)
		select {
		case a := <-done:
			if a == nil || a.datas() != `0:{"i":0}` {
				t.Fatalf("%s: woken pop %+v", q, a)
			}
		case <-time.After(8 * time.Second):
			t.Fatalf("%s: long poll not woken", q)
		}
	}
}
