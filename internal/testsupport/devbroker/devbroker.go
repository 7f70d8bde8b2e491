package devbroker

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// Broker is a dev broker served for one test.
type Broker struct {
	*dev.Broker
	URL    string        // the httptest server's base URL
	Client *queen.Client // a Queen client on URL, without a token
}

// Start builds a dev broker from opts and serves it until t ends. The
// sweeper is off unless opts.SweepInterval is positive (tests sweep when
// they mean to). wrap, when not nil, wraps the broker's handler: for a test
// that counts or records requests, or answers some itself (a synthetic
// fault, a gate). At the end the server closes first, then the broker.
func Start(t testing.TB, opts dev.Options, wrap func(http.Handler) http.Handler) *Broker {
	t.Helper()
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = -1
	}
	b, err := dev.New(opts)
	if err != nil {
		t.Fatalf("dev broker: %v", err)
	}
	var h http.Handler = b.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := testsupport.Serve(t, h, func() { _ = b.Close() })
	c, err := queen.New(queen.Config{URL: srv.URL})
	if err != nil {
		t.Fatalf("queen client: %v", err)
	}
	return &Broker{Broker: b, URL: srv.URL, Client: c}
}

// AddQueue creates queue name natively through q, its partitions
// 0..partitions-1 made by one pushed message each ({"native":true}), and
// returns the queue's id: a topic the facade did not create.
func AddQueue(t testing.TB, q *queen.Client, name string, partitions int) string {
	t.Helper()
	ctx := context.Background()
	if _, err := q.Configure(ctx, name, nil); err != nil {
		t.Fatalf("configure %s: %v", name, err)
	}
	var items []queen.PushItem
	for p := 0; p < partitions; p++ {
		items = append(items, queen.PushItem{Queue: name, Partition: strconv.Itoa(p), Payload: json.RawMessage(`{"native":true}`)})
	}
	for len(items) > 0 {
		chunk := items[:min(len(items), 1000)]
		items = items[len(chunk):]
		if _, err := q.Push(ctx, chunk); err != nil {
			t.Fatalf("push %s: %v", name, err)
		}
	}
	info := Queue(t, q, name)
	if info == nil {
		t.Fatalf("queue %s not listed", name)
	}
	return info.ID
}

// Queue is q's listing entry for name, nil when absent.
func Queue(t testing.TB, q *queen.Client, name string) *queen.QueueInfo {
	t.Helper()
	qs, err := q.Queues(context.Background())
	if err != nil {
		t.Fatalf("queues: %v", err)
	}
	for _, info := range qs {
		if info.Name == name {
			return &info
		}
	}
	return nil
}

// HoldListings is a fault for a test's middleware that answers nothing
// itself but holds every queue listing (GET /api/v1/resources/queues)
// until gate closes, saying so on entered first: a test stops a catalogue
// refresh midway to see what arrives meanwhile.
func HoldListings(gate <-chan struct{}, entered chan<- struct{}) func(r *http.Request) (status int, retryAfter string, body string) {
	return func(r *http.Request) (int, string, string) {
		if r.Method == http.MethodGet && r.URL.Path == "/api/v1/resources/queues" {
			entered <- struct{}{}
			<-gate
		}
		return 0, "", ""
	}
}
