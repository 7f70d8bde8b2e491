package contract

import (
	"testing"
)

// queen-api-consume.md §2, the discovery form: GET /api/v1/pop pops across
// every queue matching namespace/task (queue "" in the answer), and a call
// naming neither is refused with the contract body.
func TestPopDiscoveryContract(t *testing.T) {
	c := shared.client(t, "")
	ns := uniq("ns")
	q1, q2 := uniq("disc"), uniq("disc")
	for _, q := range []string{q1, q2} {
		must[any](t)(c.Configure(ctx, q, map[string]any{"namespace": ns, "task": "t"}))
		pushTx(t, c, q, q+"-m")
	}
	a := pop(t, shared, "/api/v1/pop?namespace="+ns+"&consumerGroup=g&partitions=2")
	if a.Queue != "" || a.PartitionsClaimed != 2 || a.txIDs() != q1+"-m,"+q2+"-m" || a.Messages[1].LeaseID != a.LeaseID {
		t.Fatalf("discovery: %+v", a)
	}
	for _, m := range a.Messages {
		x := ackRaw(t, shared, "/api/v1/ack", map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "consumerGroup": "g", "leaseId": a.LeaseID})
		if x[0]["success"] != true || x[0]["leaseReleased"] != true {
			t.Fatalf("ack: %v", x)
		}
	}
	if b := pop(t, shared, "/api/v1/pop?namespace="+ns+"&task=t&consumerGroup=g"); b != nil {
		t.Fatalf("after the acks: %s", b.txIDs())
	}
	r := shared.raw(t, "GET", "/api/v1/pop?consumerGroup=g", "", "")
	if r.Status != 400 || string(r.Body) != `{"success":false,"error":"namespace or task is required","messages":[]}` {
		t.Fatalf("no scope: %d %s", r.Status, r.Body)
	}
}
