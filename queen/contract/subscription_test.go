package contract

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// subRow is a list or per-group view row's subscription fields.
type subRow struct {
	SubscriptionMode      *string
	SubscriptionTimestamp *string
	SubscriptionCreatedAt *string
}

func (s subRow) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

func listSub(t *testing.T, group, queue string) (subRow, bool) {
	t.Helper()
	raw, ok := groupRows(t, shared, "")[group+"@"+queue]
	var s subRow
	if ok {
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
	}
	return s, ok
}

// queen-api-consume.md §2 and §6 against the real process: a named group's
// first queue-form pop stores its subscription (mode, timestamp, when),
// which the list and per-group views answer and which seeds a partition
// the group meets later; the partition form stores none; POST
// …/{group}/subscription moves the timestamp (required, else 400), moving
// no existing cursor; DELETE takes the subscription with the group.
func TestSubscriptionContract(t *testing.T) {
	c := shared.client(t, "")
	q, g, pin := uniq("subs"), uniq("sub"), uniq("pinned")
	pushTx(t, c, q, "s-1")
	if a := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup="+g+"&subscriptionMode=new"); a != nil {
		t.Fatalf("a new group read the backlog: %s", a.txIDs())
	}
	s, ok := listSub(t, g, q)
	if !ok || s.SubscriptionMode == nil || *s.SubscriptionMode != "new" || s.SubscriptionTimestamp == nil || s.SubscriptionCreatedAt == nil ||
		*s.SubscriptionTimestamp != *s.SubscriptionCreatedAt {
		t.Fatalf("list row of a new group: %v %s", ok, s)
	}
	if at, err := time.Parse(time.RFC3339Nano, *s.SubscriptionTimestamp); err != nil || time.Since(at) > time.Minute || time.Since(at) < 0 {
		t.Fatalf("subscriptionTimestamp %s: %v", *s.SubscriptionTimestamp, err)
	}
	// A partition created after the group subscribed: what was pushed
	// there since is delivered, though every pop asks for "new".
	must[[]queen.PushResult](t)(c.Push(ctx, []queen.PushItem{{Queue: q, Partition: "1", TransactionID: "s-2", Payload: json.RawMessage(`2`)}}))
	if a := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup="+g+"&subscriptionMode=new&partitions=2&autoAck=true"); a.txIDs() != "s-2" {
		t.Fatalf("later partition: %s", a.txIDs())
	}

	// The partition form stores no subscription.
	if a := pop(t, shared, "/api/v1/pop/queue/"+q+"/partition/0?consumerGroup="+pin+"&autoAck=true"); a.txIDs() != "s-1" {
		t.Fatalf("pinned pop: %s", a.txIDs())
	}
	if s, ok := listSub(t, pin, q); !ok || s.SubscriptionMode != nil || s.SubscriptionTimestamp != nil || s.SubscriptionCreatedAt != nil {
		t.Fatalf("pinned group's row: %v %s", ok, s)
	}

	path := "/api/v1/consumer-groups/" + g + "/subscription"
	for body, want := range map[string]int{`{}`: 400, `{"subscriptionTimestamp":""}`: 400, `not json`: 400} {
		if r := shared.raw(t, "POST", path, "", body); r.Status != want || r.json(t)["error"] == nil {
			t.Errorf("subscription %s: %d %s", body, r.Status, r.Body)
		}
	}
	r := shared.raw(t, "POST", "/api/v1/consumer-groups/"+uniq("nobody")+"/subscription", "", `{"subscriptionTimestamp":"2000-01-01T00:00:00Z"}`)
	if m := r.json(t); r.Status != 200 || m["success"] != true || m["rowsUpdated"] != 0.0 {
		t.Fatalf("unknown group: %d %s", r.Status, r.Body)
	}
	r = shared.raw(t, "POST", path, "", `{"subscriptionTimestamp":"2100-01-01T00:00:00Z"}`)
	if m := r.json(t); r.Status != 200 || m["success"] != true || m["consumerGroup"] != g || m["newTimestamp"] != "2100-01-01T00:00:00Z" || m["rowsUpdated"] != 1.0 {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	if s, _ := listSub(t, g, q); *s.SubscriptionMode != "new" || *s.SubscriptionTimestamp != "2100-01-01T00:00:00.000Z" {
		t.Fatalf("after the update: %s", s)
	}
	// Existing cursors stay; a partition met from now on starts at the
	// new timestamp (after everything stored there).
	must[[]queen.PushResult](t)(c.Push(ctx, []queen.PushItem{{Queue: q, Partition: "2", TransactionID: "s-3", Payload: json.RawMessage(`3`)}}))
	if a := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup="+g+"&partitions=3&autoAck=true"); a != nil {
		t.Fatalf("after moving the timestamp forward: %s", a.txIDs())
	}
	pushTx(t, c, q, "s-4")
	if a := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup="+g+"&partitions=3&autoAck=true"); a.txIDs() != "s-4" {
		t.Fatalf("the existing cursor moved: %s", a.txIDs())
	}
	var details map[string]subRow
	if r := shared.raw(t, "GET", "/api/v1/consumer-groups/"+g, "", ""); r.Status != 200 || json.Unmarshal(r.Body, &details) != nil ||
		details[q].SubscriptionMode == nil || *details[q].SubscriptionTimestamp != "2100-01-01T00:00:00.000Z" {
		t.Fatalf("per-group view: %d %s", r.Status, r.Body)
	}

	if r := shared.raw(t, "DELETE", "/api/v1/consumer-groups/"+g, "", ""); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if a := pop(t, shared, "/api/v1/pop/queue/"+q+"?consumerGroup="+g+"&partitions=3&autoAck=true"); a.txIDs() != "s-1,s-4,s-2,s-3" {
		t.Fatalf("after delete (registered afresh, all): %s", a.txIDs())
	}
	if s, _ := listSub(t, g, q); *s.SubscriptionMode != "all" || *s.SubscriptionTimestamp != "1970-01-01T00:00:00.000Z" {
		t.Fatalf("re-registered: %s", s)
	}
}
