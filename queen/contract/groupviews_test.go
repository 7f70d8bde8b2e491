package contract

import (
	"encoding/json"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// queen-api-consume.md §6 against the real process: the per-group and
// lagging views carry both kinds, delete drops a group's cursors (its next
// pop starts over), and seek moves them (toEnd, timestamp, the partition
// form's empty body), releasing the lease.
func TestGroupViewsContract(t *testing.T) {
	c := shared.client(t, "")
	q, g, kg := uniq("views"), uniq("native"), uniq("kafka")
	pushTx(t, c, q, "v-1", "v-2", "v-3")
	a := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup="+g+"&batch=1&leaseSeconds=300")
	must[[]queen.KVResult](t)(c.KV(ctx, []queen.KVOp{kvPut(queen.GroupOffsetKey(kg, q, 0), map[string]any{"offset": 1}, nil)}))

	var details map[string]struct {
		Kind       string
		Partitions []map[string]any
	}
	r := shared.raw(t, "GET", "/api/v1/consumer-groups/"+g, "", "")
	if err := json.Unmarshal(r.Body, &details); r.Status != 200 || err != nil || details[q].Kind != "queen" || len(details[q].Partitions) != 1 ||
		details[q].Partitions[0]["offsetLag"] != 3.0 || details[q].Partitions[0]["leaseActive"] != true || details[q].Partitions[0]["workerId"] != a.LeaseID {
		t.Fatalf("details: %d %s", r.Status, r.Body)
	}
	r = shared.raw(t, "GET", "/api/v1/consumer-groups/"+kg, "", "")
	if err := json.Unmarshal(r.Body, &details); r.Status != 200 || err != nil || details[q].Kind != "kafka" || details[q].Partitions[0]["offsetLag"] != 2.0 {
		t.Fatalf("kafka details: %d %s", r.Status, r.Body)
	}
	var lagging []map[string]any
	r = shared.raw(t, "GET", "/api/v1/consumer-groups/lagging?minLagSeconds=-1", "", "")
	if err := json.Unmarshal(r.Body, &lagging); r.Status != 200 || err != nil {
		t.Fatalf("lagging: %d %s", r.Status, r.Body)
	}
	kinds := map[string]float64{}
	for _, row := range lagging {
		if row["queue_name"] == q {
			kinds[row["kind"].(string)+":"+row["consumer_group"].(string)] = row["offset_lag"].(float64)
		}
	}
	if len(kinds) != 2 || kinds["queen:"+g] != 3 || kinds["kafka:"+kg] != 2 {
		t.Fatalf("lagging rows of %s: %v", q, kinds)
	}

	r = shared.raw(t, "POST", "/api/v1/consumer-groups/"+g+"/queues/"+q+"/seek", "", `{"toEnd":true}`)
	if m := r.json(t); r.Status != 200 || m["partitionsUpdated"] != 1.0 || m["seekToEnd"] != true {
		t.Fatalf("seek: %d %s", r.Status, r.Body)
	}
	if x := ackRaw(t, shared, "/api/v1/ack", map[string]any{"transactionId": "v-1", "partitionId": a.PartitionID, "consumerGroup": g, "leaseId": a.LeaseID}); x[0]["success"] != false {
		t.Fatalf("the seek must release the lease: %v", x)
	}
	if x := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup="+g); x != nil {
		t.Fatalf("after seek to end: %s", x.txIDs())
	}
	r = shared.raw(t, "POST", "/api/v1/consumer-groups/"+g+"/queues/"+q+"/seek", "", `{"timestamp":"2000-01-01T00:00:00Z"}`)
	if r.Status != 200 {
		t.Fatalf("seek to a timestamp: %d %s", r.Status, r.Body)
	}
	if x := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup="+g+"&autoAck=true"); x.txIDs() != "v-1,v-2,v-3" {
		t.Fatalf("after seek back: %s", x.txIDs())
	}
	if r := shared.raw(t, "POST", "/api/v1/consumer-groups/"+g+"/queues/"+q+"/partitions/0/seek", "", ""); r.Status != 200 || r.json(t)["updated"] != true {
		t.Fatalf("partition seek: %d %s", r.Status, r.Body)
	}
	for body, want := range map[string]int{`{}`: 400, `{"toEnd":false}`: 400} {
		if r := shared.raw(t, "POST", "/api/v1/consumer-groups/"+g+"/queues/"+q+"/seek", "", body); r.Status != want {
			t.Errorf("seek %s: %d %s", body, r.Status, r.Body)
		}
	}
	if r := shared.raw(t, "POST", "/api/v1/consumer-groups/"+g+"/queues/"+uniq("none")+"/seek", "", `{"toEnd":true}`); r.Status != 404 {
		t.Errorf("seek of a missing queue: %d %s", r.Status, r.Body)
	}

	r = shared.raw(t, "DELETE", "/api/v1/consumer-groups/"+g, "", "")
	if m := r.json(t); r.Status != 200 || m["deletedPartitions"] != 1.0 || m["consumerGroup"] != g || m["metadataDeleted"] != true {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if x := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup="+g+"&autoAck=true"); x.txIDs() != "v-1,v-2,v-3" {
		t.Fatalf("after delete: %s", x.txIDs())
	}
	if r := shared.raw(t, "GET", "/api/v1/consumer-groups/"+uniq("nobody"), "", ""); r.Status != 200 || string(r.Body) != "{}" {
		t.Fatalf("unknown group: %d %s", r.Status, r.Body)
	}
}
