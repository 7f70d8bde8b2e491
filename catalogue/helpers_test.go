package catalogue

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// testQueen is a dev broker that counts the calls per method and path,
// and may answer one itself (fault: a synthetic failure, or a gate).
type testQueen struct {
	t     *testing.T
	q     *queen.Client
	mu    sync.Mutex
	calls map[string]int
	fault func(r *http.Request) (status int, retryAfter string, body string)
}

// newTestCatalogues is a node's catalogues (QUEEN_KAFKA_DEFAULT_PARTITIONS
// 4, single mode) over a fresh dev broker.
func newTestCatalogues(t *testing.T) (*Catalogues, *testQueen) {
	t.Helper()
	tq := &testQueen{t: t, calls: map[string]int{}}
	b := devbroker.Start(t, dev.Options{}, func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tq.mu.Lock()
			tq.calls[r.Method+" "+r.URL.Path]++
			f := tq.fault
			tq.mu.Unlock()
			if f != nil {
				if status, _, body := f(r); status != 0 {
					http.Error(w, body, status)
					return
				}
			}
			inner.ServeHTTP(w, r)
		})
	})
	tq.q = b.Client
	return New(Deps{DefaultPartitions: 4, Now: time.Now, Queen: b.Client}), tq
}

// withClock drives the catalogues' TTL from a fake clock.
func withClock(cs *Catalogues) *testsupport.FakeClock {
	clk := testsupport.NewFakeClock(time.Unix(1_800_000_000, 0))
	cs.SetClock(clk.Now)
	return clk
}

func (tq *testQueen) count(route string) int {
	tq.mu.Lock()
	defer tq.mu.Unlock()
	return tq.calls[route]
}

func (tq *testQueen) setFault(f func(r *http.Request) (int, string, string)) {
	tq.mu.Lock()
	tq.fault = f
	tq.mu.Unlock()
}

// addQueue creates a queue natively, its partitions 0..partitions-1 made
// by one message each, and returns the queue's id.
func (tq *testQueen) addQueue(name string, partitions int) string {
	tq.t.Helper()
	ctx := context.Background()
	if _, err := tq.q.Configure(ctx, name, nil); err != nil {
		tq.t.Fatalf("configure %s: %v", name, err)
	}
	items := make([]queen.PushItem, partitions)
	for p := range items {
		items[p] = queen.PushItem{Queue: name, Partition: strconv.Itoa(p), Payload: json.RawMessage(`{}`)}
	}
	if _, err := tq.q.Push(ctx, items); err != nil {
		tq.t.Fatalf("push %s: %v", name, err)
	}
	qs, err := tq.q.Queues(ctx)
	if err != nil {
		tq.t.Fatalf("queues: %v", err)
	}
	for _, q := range qs {
		if q.Name == name {
			return q.ID
		}
	}
	tq.t.Fatalf("queue %s not listed", name)
	return ""
}
