package dev

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// txIDs lists a pop's transactionIds ("204" for nothing).
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

// Kind s: a subscription row round-trips, its key is filed under the
// queue id (so a queue's range deletion takes it) with the group as the
// last component (any bytes), and a cut value is an error.
func TestSubscriptionKeyAndCodec(t *testing.T) {
	for _, s := range []subscription{{mode: subAll}, {mode: subNew, ts: 1787908500123456, created: 1787908500123456},
		{mode: subTimestamp, ts: -5, created: 1}} {
		v := encodeSub(&s)
		got, err := decodeSub(v)
		if err != nil || *got != s {
			t.Fatalf("round trip %+v: %+v %v", s, got, err)
		}
		if _, err := decodeSub(v[:len(v)-1]); err == nil {
			t.Fatalf("a cut value of %+v decoded", s)
		}
	}
	for _, group := range []string{"g", "", "a\x00b", "\xff\xff", strings.Repeat("x", 300)} {
		k := keySub("qid-1", group)
		prefix := queuePrefix(kindSub, "qid-1")
		if !bytes.HasPrefix(k, prefix) || string(k[len(prefix):]) != group || bytes.Compare(k, prefixEnd(prefix)) >= 0 {
			t.Fatalf("key of %q: %q", group, k)
		}
		if bytes.HasPrefix(k, queuePrefix(kindSub, "qid-")) || bytes.HasPrefix(keySub("qid-10", group), prefix) {
			t.Fatalf("queue prefixes overlap for %q", group)
		}
	}
}

// §2/§6: a named group's first queue-form pop stores its subscription, and
// a partition the group meets later (created after it subscribed) is
// seeded from it: a "new" group reads what was pushed there after it
// subscribed, not only what comes after its first contact with it.
func TestSubscriptionSeedsLaterPartitions(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushKeyed("q", "0", "old-0")
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=g&subscriptionMode=new&autoAck=true"); a != nil {
		t.Fatalf("a new group read the backlog: %s", a.txIDs())
	}
	clk.Advance(time.Second)
	e.pushKeyed("q", "1", "late-1a", "late-1b") // a partition created after the group subscribed
	e.pushKeyed("q", "0", "new-0")
	// The consumer asks for "new" on every pop, as a client does: only
	// the stored subscription tells partition 1's first contact when.
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=g&subscriptionMode=new&autoAck=true&partitions=2"); a.txIDs() != "new-0,late-1a,late-1b" {
		t.Fatalf("after subscribing: %s", a.txIDs())
	}
	// A timestamp wins over mode new, as Queen's registration decides.
	from := clk.Now().Add(-time.Second / 2).UTC().Format(time.RFC3339Nano)
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=ts&subscriptionMode=new&autoAck=true&partitions=2&subscriptionFrom=" + from); a.txIDs() != "new-0,late-1a,late-1b" {
		t.Fatalf("timestamp subscription: %s", a.txIDs())
	}
	st, raw, _ := e.do("GET", "/api/v1/consumer-groups/ts", "", "")
	if v := wantStatus(t, st, raw, 200); field(v, "q", "subscriptionMode") != subTimestamp || field(v, "q", "subscriptionTimestamp") != "2026-08-28T09:15:00.623Z" ||
		field(v, "q", "subscriptionCreatedAt") != "2026-08-28T09:15:01.123Z" {
		t.Fatalf("details: %s", raw)
	}
}

// The registering pop seeds every partition of the queue, not only those
// it claims: a timestamp group that claims one partition finds the other
// seeded at the same moment when it comes back with another intent.
func TestSubscriptionRegistrationSeedsEveryPartition(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushKeyed("q", "a", "a-old")
	e.pushKeyed("q", "b", "b-old")
	clk.Advance(time.Second)
	from := clk.Now().UTC().Format(time.RFC3339Nano)
	e.pushKeyed("q", "a", "a-new")
	e.pushKeyed("q", "b", "b-new")
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=g&autoAck=true&subscriptionFrom=" + from); a.txIDs() != "a-new" {
		t.Fatalf("first pop: %s", a.txIDs())
	}
	st, raw, _ := e.do("GET", "/api/v1/consumer-groups", "", "")
	if v := wantStatus(t, st, raw, 200); num(field(v, 0, "members")) != 2 || num(field(v, 0, "totalLag")) != 1 {
		t.Fatalf("both partitions seeded: %s", raw)
	}
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=g&autoAck=true&subscriptionMode=all"); a.txIDs() != "b-new" {
		t.Fatalf("second pop: %s", a.txIDs())
	}
}

// The partition form registers nothing (Queen's pinned pop writes no
// registration): its group's rows show null subscription fields and its
// first contact follows the pop's own intent; once a queue-form pop has
// registered the group, a partition-form first contact follows the
// stored subscription.
func TestSubscriptionPartitionForm(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushKeyed("q", "0", "0-old")
	e.pushKeyed("q", "1", "1-old")
	if a := e.pop("/api/v1/pop/queue/q/partition/0?consumerGroup=pin&subscriptionMode=new"); a != nil {
		t.Fatalf("pinned new group: %s", a.txIDs())
	}
	st, raw, _ := e.do("GET", "/api/v1/consumer-groups", "", "")
	if v := wantStatus(t, st, raw, 200); field(v, 0, "name") != "pin" || field(v, 0, "subscriptionMode") != nil || num(field(v, 0, "members")) != 1 {
		t.Fatalf("pinned group row: %s", raw)
	}
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=pin&subscriptionMode=new&autoAck=true"); a != nil { // registers: partition 1 from its end
		t.Fatalf("registering pop: %s", a.txIDs())
	}
	clk.Advance(time.Second)
	e.pushKeyed("q", "2", "2-new")
	if a := e.pop("/api/v1/pop/queue/q/partition/2?consumerGroup=pin&autoAck=true"); a.txIDs() != "2-new" {
		t.Fatalf("pinned first contact after registration: %s", a.txIDs())
	}
	st, raw, _ = e.do("GET", "/api/v1/consumer-groups", "", "")
	if v := wantStatus(t, st, raw, 200); field(v, 0, "subscriptionMode") != subNew || field(v, 0, "subscriptionTimestamp") != "2026-08-28T09:15:00.123Z" || num(field(v, 0, "members")) != 3 {
		t.Fatalf("registered row: %s", raw)
	}
}

// POST …/{group}/subscription: the body's subscriptionTimestamp is
// required (400); an unparsable one fails as Queen's cast does (500); an
// unknown group is rowsUpdated 0; a known one moves the timestamp of
// every queue it registered on (mode kept), which seeds the partitions
// it meets afterwards, while its existing cursors stay where they are.
func TestSubscriptionUpdate(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushKeyed("q", "0", "q0-old")
	e.pushKeyed("r", "0", "r0-old")
	e.pop("/api/v1/pop/queue/q?consumerGroup=g&subscriptionMode=new")
	e.pop("/api/v1/pop/queue/r?consumerGroup=g&subscriptionMode=new")
	path := "/api/v1/consumer-groups/g/subscription"
	for body, want := range map[string]int{``: 400, `{`: 400, `{}`: 400, `{"subscriptionTimestamp":""}`: 400, `{"subscriptionTimestamp":null}`: 400,
		`{"subscriptionTimestamp":7}`: 400, `{"subscriptionTimestamp":"yesterday"}`: 500} {
		st, raw := e.post(path, body)
		wantStatus(t, st, raw, want)
		if want == 400 && !bytes.Contains(raw, []byte(`"error"`)) {
			t.Errorf("%q: %s", body, raw)
		}
	}
	st, raw := e.post("/api/v1/consumer-groups/nobody/subscription", `{"subscriptionTimestamp":"2026-01-01T00:00:00Z"}`)
	if v := wantStatus(t, st, raw, 200); field(v, "success") != true || num(field(v, "rowsUpdated")) != 0 || field(v, "consumerGroup") != "nobody" {
		t.Fatalf("unknown group: %s", raw)
	}
	clk.Advance(time.Second)
	e.pushKeyed("q", "1", "q1-a")
	clk.Advance(time.Second)
	cut := clk.Now().UTC().Format(time.RFC3339Nano)
	e.pushKeyed("q", "1", "q1-b")
	e.pushKeyed("q", "0", "q0-new")
	st, raw = e.post(path, `{"subscriptionTimestamp":"`+cut+`"}`)
	if v := wantStatus(t, st, raw, 200); field(v, "success") != true || num(field(v, "rowsUpdated")) != 2 || field(v, "newTimestamp") != cut || field(v, "consumerGroup") != "g" {
		t.Fatalf("update: %s", raw)
	}
	// Partition 0's cursor (seeded when g subscribed) is not moved; the
	// new partition 1 starts at the new timestamp.
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=g&autoAck=true&partitions=2"); a.txIDs() != "q0-new,q1-b" {
		t.Fatalf("after update: %s", a.txIDs())
	}
	st, raw, _ = e.do("GET", "/api/v1/consumer-groups", "", "")
	v := wantStatus(t, st, raw, 200)
	for i := 0; i < 2; i++ {
		if field(v, i, "subscriptionMode") != subNew || field(v, i, "subscriptionTimestamp") != "2026-08-28T09:15:02.123Z" ||
			field(v, i, "subscriptionCreatedAt") != "2026-08-28T09:15:00.123Z" {
			t.Fatalf("list view after update: %s", raw)
		}
	}
}

// DELETE of a group takes its subscriptions with deleteMetadata (the
// default), so the next pop registers afresh; with deleteMetadata=false
// they stay and seed the new cursors. (Deleting a queue takes every
// subscription on it: TestDeleteQueueDropsConsumeRows.)
func TestSubscriptionDelete(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushKeyed("q", "0", "old")
	clk.Advance(time.Second) // the subscription's moment is after "old" was stored
	e.pop("/api/v1/pop/queue/q?consumerGroup=g&subscriptionMode=new")
	e.pushKeyed("q", "0", "new")
	st, raw, _ := e.do("DELETE", "/api/v1/consumer-groups/g?deleteMetadata=false", "", "")
	if v := wantStatus(t, st, raw, 200); field(v, "metadataDeleted") != false {
		t.Fatalf("delete: %s", raw)
	}
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=g&autoAck=true"); a.txIDs() != "new" {
		t.Fatalf("metadata kept, the stored subscription seeds: %s", a.txIDs())
	}
	st, raw, _ = e.do("DELETE", "/api/v1/consumer-groups/g/queues/q", "", "")
	wantStatus(t, st, raw, 200)
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=g&autoAck=true"); a.txIDs() != "old,new" {
		t.Fatalf("metadata deleted, the pop registers afresh (all): %s", a.txIDs())
	}
	st, raw, _ = e.do("GET", "/api/v1/consumer-groups", "", "")
	if v := wantStatus(t, st, raw, 200); field(v, 0, "subscriptionMode") != subAll {
		t.Fatalf("re-registered: %s", raw)
	}
}

// Subscriptions are durable: a restarted broker answers them and seeds
// from them.
func TestSubscriptionDurable(t *testing.T) {
	dir := t.TempDir()
	clk := newFakeClock()
	e := newEnv(t, Options{Dir: dir, Now: clk.Now})
	e.pushKeyed("q", "0", "old")
	e.pop("/api/v1/pop/queue/q?consumerGroup=g&subscriptionMode=new")
	e.srv.Close()
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	e = newEnv(t, Options{Dir: dir, Now: clk.Now})
	e.pushKeyed("q", "1", "late")
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=g&subscriptionMode=new&autoAck=true&partitions=2"); a.txIDs() != "late" {
		t.Fatalf("after restart: %s", a.txIDs())
	}
	st, raw, _ := e.do("GET", "/api/v1/consumer-groups", "", "")
	if v := wantStatus(t, st, raw, 200); field(v, 0, "subscriptionMode") != subNew || field(v, 0, "subscriptionCreatedAt") != "2026-08-28T09:15:00.123Z" {
		t.Fatalf("after restart: %s", raw)
	}
}

// Queue mode (no consumerGroup, or __QUEUE_MODE__ named) ignores
// subscriptionMode and subscriptionFrom: it always reads the backlog, and
// stores "all" as Queen's registration does for it.
func TestSubscriptionQueueMode(t *testing.T) {
	e := newEnv(t, Options{Now: newFakeClock().Now})
	e.pushKeyed("q", "0", "a")
	e.pushKeyed("r", "0", "b")
	if a := e.pop("/api/v1/pop/queue/q?consumerGroup=" + queueModeGroup + "&subscriptionMode=new&autoAck=true"); a.txIDs() != "a" {
		t.Fatalf("named queue mode: %s", a.txIDs())
	}
	if a := e.pop("/api/v1/pop/queue/r?subscriptionFrom=now&autoAck=true"); a.txIDs() != "b" {
		t.Fatalf("queue mode: %s", a.txIDs())
	}
	st, raw, _ := e.do("GET", "/api/v1/consumer-groups", "", "")
	v := wantStatus(t, st, raw, 200)
	for i := 0; i < 2; i++ {
		if field(v, i, "name") != queueModeGroup || field(v, i, "subscriptionMode") != subAll || field(v, i, "subscriptionTimestamp") != "1970-01-01T00:00:00.000Z" {
			t.Fatalf("queue mode rows: %s", raw)
		}
	}
}
