package dev

import (
	"net/http"
	"testing"
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
