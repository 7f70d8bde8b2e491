package catalogue

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen"
)

// A listed topic's id is its queue's id; the id maps back to the name; a
// queue deleted and recreated natively gets a new id, and the old one is
// unknown from the next listing on.
func TestTopicIDIsTheQueueID(t *testing.T) {
	cs, dq := newTestCatalogues(t)
	qid := dq.addQueue("orders", 2)
	want := uuid.MustParse(qid)
	cat := cs.For(Caller{})
	if err := cat.Ensure(t.Context(), Caller{}, true); err != nil {
		t.Fatal(err)
	}
	got, ok := cat.TopicID("orders")
	if !ok || got != want {
		t.Fatalf("TopicID(orders) = %x, %v; want the queue id %s", got, ok, qid)
	}
	if name, ok := cat.TopicByID(want); !ok || name != "orders" {
		t.Fatalf("TopicByID(%s) = %q, %v", qid, name, ok)
	}
	if _, ok := cat.TopicID("absent"); ok {
		t.Fatal("an unknown topic has an id")
	}

	if _, err := dq.q.DeleteQueue(t.Context(), "orders"); err != nil {
		t.Fatal(err)
	}
	qid2 := dq.addQueue("orders", 1)
	if qid2 == qid {
		t.Fatalf("queen-dev reused id %s for a recreated queue", qid)
	}
	if err := cat.Ensure(t.Context(), Caller{}, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := cat.TopicByID(want); ok {
		t.Fatal("the deleted queue's id still names a topic")
	}
	name, width, ok, err := cs.ResolveID(t.Context(), Caller{}, uuid.MustParse(qid2))
	if err != nil || !ok || name != "orders" || width != 4 {
		t.Fatalf("topicByID(new id) = %q, %d, %v, %v; want orders, 4 (the default width)", name, width, ok, err)
	}
	if _, _, ok, _ := cs.ResolveID(t.Context(), Caller{}, want); ok {
		t.Fatal("topicByID found the deleted queue's id")
	}
}

// A topic this process created but the listing does not show yet has no id
// (never a provisional one a client would later see change), and a deleted
// topic's id is forgotten at once.
func TestTopicIDUnlistedAndRemoved(t *testing.T) {
	cs, dq := newTestCatalogues(t)
	qid := dq.addQueue("doomed", 1)
	cat := cs.For(Caller{})
	if err := cat.Ensure(context.Background(), Caller{}, true); err != nil {
		t.Fatal(err)
	}
	cat.Added("born", nil)
	if id, ok := cat.TopicID("born"); ok {
		t.Fatalf("an unlisted topic has id %x", id)
	}
	cat.Removed("doomed")
	if _, ok := cat.TopicByID(uuid.MustParse(qid)); ok {
		t.Fatal("a removed topic's id still names it")
	}
	if _, ok := cat.TopicByID([16]byte{}); ok {
		t.Fatal("the zero id names a topic")
	}
}

// Where Queen gives no id, or one that is not a UUID, the id is derived:
// stable, never zero, different per name and per opaque id.
func TestDerivedTopicIDs(t *testing.T) {
	a := queueTopicID(queen.QueueInfo{Name: "a"})
	if a != queueTopicID(queen.QueueInfo{Name: "a"}) || a == ([16]byte{}) {
		t.Fatalf("name-derived id unstable or zero: %x", a)
	}
	if a == queueTopicID(queen.QueueInfo{Name: "b"}) {
		t.Fatal("two names derive one id")
	}
	if uuid.UUID(a).Version() != 5 {
		t.Fatalf("derived id %s is not a UUIDv5", uuid.UUID(a))
	}
	o1 := queueTopicID(queen.QueueInfo{Name: "a", ID: "queue-17"})
	o2 := queueTopicID(queen.QueueInfo{Name: "a", ID: "queue-18"})
	if o1 == o2 || o1 == a {
		t.Fatal("opaque ids do not derive distinct ids")
	}
	if queueTopicID(queen.QueueInfo{Name: "a", ID: uuid.Nil.String()}) == ([16]byte{}) {
		t.Fatal("a nil-UUID queue id became the zero topic id")
	}
	// Pinned: a derived id must never change across builds, or clients
	// take every such topic as recreated on upgrade.
	if got := uuid.UUID(a).String(); got != "2d50699f-6c16-5c46-8070-32484ce7c50b" {
		t.Fatalf("derived id of a = %s", got)
	}
}

// A data-path request naming topics by id learns each id's name and
// verdict once: a live topic's width, UNKNOWN_TOPIC_ID for an id nobody
// has, and for the id of a queue no Kafka client can address (an internal
// name), which Metadata never lists.
func TestTopicVerdictsByID(t *testing.T) {
	cs, dq := newTestCatalogues(t)
	live := uuid.MustParse(dq.addQueue("orders", 6))
	internal := uuid.MustParse(dq.addQueue("__hidden", 1))
	var throttle int32
	v := cs.Verdicts(Caller{}, failFault, &throttle)
	name, tv, err := v.OfID(t.Context(), live)
	if err != nil || name != "orders" || tv.Code != 0 || tv.Width != 6 {
		t.Fatalf("ofID(live) = %q, %+v, %v", name, tv, err)
	}
	before := dq.Count("GET /api/v1/resources/queues")
	for _, id := range [][16]byte{uuid.New(), internal, {}} {
		name, tv, err := v.OfID(t.Context(), id)
		if err != nil || name != "" || tv.Code != kerr.UnknownTopicID.Code {
			t.Fatalf("ofID(%x) = %q, %+v, %v; want UNKNOWN_TOPIC_ID", id, name, tv, err)
		}
	}
	if _, tv, _ := v.OfID(t.Context(), live); tv.Width != 6 {
		t.Fatalf("second ofID(live) = %+v", tv)
	}
	if got := dq.Count("GET /api/v1/resources/queues") - before; got != 0 {
		t.Fatalf("%d listings for ids in single mode within the catalogue's TTL, want 0", got)
	}
}

// failFault maps any failed read to UNKNOWN_SERVER_ERROR: these tests read
// a healthy Queen, so no verdict of theirs comes from it.
func failFault(err error) (int16, int32, string, error) {
	return kerr.UnknownServerError.Code, 0, err.Error(), nil
}
