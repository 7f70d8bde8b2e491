package catalogue

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
)

// More topic records than one getPrefix page holds are all read, page by
// page, and an unreadable record is treated as absent.
func TestLoadTopicCfgsPages(t *testing.T) {
	_, dq := newTestCatalogues(t)
	const records = 2500
	var ops []queen.KVOp
	for i := 0; i < records; i++ {
		v, _ := json.Marshal(map[string]any{"qid": nil, "set": map[string]any{}, "at": 1, "partitions": i + 1})
		ops = append(ops, queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TopicCfgKey(fmt.Sprintf("t%05d", i)), Value: v, Forever: true})
	}
	ops = append(ops, queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TopicCfgKey("broken"), Value: json.RawMessage(`"not a record"`), Forever: true})
	for len(ops) > 0 {
		chunk := ops[:min(len(ops), 200)]
		ops = ops[len(chunk):]
		if _, err := dq.q.KV(t.Context(), chunk); err != nil {
			t.Fatal(err)
		}
	}
	before := dq.Count("POST /api/v1/kv")
	cfgs, err := loadTopicCfgs(t.Context(), dq.q)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != records {
		t.Fatalf("%d records read, want %d", len(cfgs), records)
	}
	if cfgs["t02499"].Partitions != 2500 || cfgs["t00000"].Partitions != 1 {
		t.Fatalf("wrong values: %+v %+v", cfgs["t02499"], cfgs["t00000"])
	}
	if calls := dq.Count("POST /api/v1/kv") - before; calls < 3 {
		t.Fatalf("%d calls for %d records: pages were not followed", calls, records)
	}
}

// A refresh whose listing was taken before a local create or delete does
// not undo it when it lands.
func TestRefreshDoesNotUndoLocalChanges(t *testing.T) {
	cs, dq := newTestCatalogues(t)
	withClock(cs)
	dq.addQueue("doomed", 1)
	cat := cs.For(Caller{})
	listed := make(chan struct{})
	release := make(chan struct{})
	dq.SetFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path == "/api/v1/kv" { // the listing is taken; hold the refresh here
			close(listed)
			<-release
		}
		return 0, "", ""
	})
	done := make(chan error, 1)
	go func() { done <- cat.Ensure(context.Background(), Caller{}, true) }()
	<-listed
	cat.Added("born", nil)
	cat.Removed("doomed")
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, ok := cat.Lookup("born"); !ok {
		t.Fatal("a topic created during the refresh was dropped")
	}
	if _, ok := cat.Lookup("doomed"); ok {
		t.Fatal("a topic deleted during the refresh came back")
	}
	dq.SetFault(nil)
	// The next refresh's listing is authoritative again.
	if err := cat.Ensure(context.Background(), Caller{}, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := cat.Lookup("doomed"); !ok {
		t.Fatal("the queue still exists in Queen and must be listed")
	}
}

// Forced refreshes asked for while a listing runs share the one listing
// queued behind it, whatever mode the node is in, and that listing runs
// even when every caller that asked for it stopped waiting at its own
// deadline: it is theirs and the next caller's, not one caller's.
func TestForcedRefreshesShareOneQueuedListing(t *testing.T) {
	cs, dq := newTestCatalogues(t)
	cat := cs.For(Caller{})
	gate := make(chan struct{})
	entered := make(chan struct{}, 8)
	dq.SetFault(devbroker.HoldListings(gate, entered))
	before := dq.Count("GET /api/v1/resources/queues")
	first := make(chan error, 1)
	go func() { first <- cat.Ensure(context.Background(), Caller{}, true) }()
	<-entered // the first listing is running

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for range 5 {
		if err := cat.Ensure(gone, Caller{}, true); err != context.Canceled {
			t.Fatalf("a caller past its deadline got %v, want context.Canceled", err)
		}
	}
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// Bounded wait for the queued listing to begin: no caller waits for it.
	listings := func() int { return dq.Count("GET /api/v1/resources/queues") - before }
	for i := 0; i < 500 && listings() < 2; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if got := listings(); got != 2 {
		t.Fatalf("%d listings for one running and five forced callers, want 2", got)
	}
}

// A commit's miss (Topics' Width) is looked up again after a listing, but
// not after a second one when the listing that loaded the catalogue began
// after the request arrived: a catalogue's first commit to an absent topic
// costs one listing.
func TestServedTopicsMissListsOnce(t *testing.T) {
	cs, dq := newTestCatalogues(t)
	topics := cs.Topics(Caller{})
	const listing = "GET /api/v1/resources/queues"
	if _, ok, err := topics.Width(t.Context(), "native"); ok || err != nil {
		t.Fatalf("an absent topic: served %v, err %v", ok, err)
	}
	if got := dq.Count(listing); got != 1 {
		t.Fatalf("%d listings for a first request that missed, want 1", got)
	}
	dq.addQueue("native", 2) // natively, since the catalogue was loaded
	before := dq.Count(listing)
	if w, ok, err := topics.Width(t.Context(), "native"); !ok || err != nil || w != 4 {
		t.Fatalf("a topic created since the listing: width %d, served %v, err %v; want 4, true", w, ok, err)
	}
	if got := dq.Count(listing) - before; got != 1 {
		t.Fatalf("%d listings for the miss, want 1", got)
	}
}

// A refresh that failed is not retried before a backoff that doubles from
// RefreshBackoffMin to RefreshBackoffMax and restarts on success; callers
// meanwhile get the failure (a loaded catalogue answers from its listing,
// as its callers decide), forced or not (issue 20 item 13: a Queen outage
// cost it about 60 listings a second).
func TestFailingRefreshBacksOff(t *testing.T) {
	cs, dq := newTestCatalogues(t)
	clk := withClock(cs)
	cat := cs.For(Caller{})
	ctx := t.Context()
	const listing = "GET /api/v1/resources/queues"
	outage := func(r *http.Request) (int, string, string) {
		return http.StatusServiceUnavailable, "", `{"error":"down"}`
	}
	dq.SetFault(outage)
	listings := func() int { return dq.Count(listing) }
	for i := range 100 {
		if err := cat.Ensure(ctx, Caller{}, i%2 == 0); err == nil {
			t.Fatal("a refresh succeeded against a failing Queen")
		}
	}
	if got := listings(); got != backoffAfter {
		t.Fatalf("%d listings for 100 refreshes within the first backoff, want %d (a lone failure is retried at once)", got, backoffAfter)
	}
	// The backoff doubles up to its cap.
	want := backoffAfter
	for wait := RefreshBackoffMin; ; wait = min(2*wait, RefreshBackoffMax) {
		clk.Advance(wait - time.Millisecond)
		_ = cat.Ensure(ctx, Caller{}, true)
		if got := listings(); got != want {
			t.Fatalf("%d listings %v into a %v backoff, want %d", got, wait-time.Millisecond, wait, want)
		}
		clk.Advance(time.Millisecond)
		_ = cat.Ensure(ctx, Caller{}, true)
		want++
		if got := listings(); got != want {
			t.Fatalf("%d listings once a %v backoff ran out, want %d", got, wait, want)
		}
		if wait == RefreshBackoffMax {
			break
		}
	}
	// A success restarts it.
	dq.SetFault(nil)
	clk.Advance(RefreshBackoffMax)
	if err := cat.Ensure(ctx, Caller{}, false); err != nil {
		t.Fatal(err)
	}
	dq.SetFault(outage)
	clk.Advance(TTL)
	before := listings()
	if err := cat.Ensure(ctx, Caller{}, true); err == nil {
		t.Fatal("a refresh succeeded against a failing Queen")
	}
	clk.Advance(RefreshBackoffMin)
	_ = cat.Ensure(ctx, Caller{}, true)
	if got := listings() - before; got != 2 {
		t.Fatalf("%d listings across a first backoff after a success, want 2", got)
	}
}
