package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// devQueen is the in-process development broker behind an httptest server,
// with a thin middleware that counts calls per route, keeps request bodies,
// and may answer a request itself (a synthetic fault or a gate).
type devQueen struct {
	t   *testing.T
	b   *dev.Broker
	url string
	q   *queen.Client

	mu     sync.Mutex
	calls  map[string]int
	bodies map[string][]map[string]any
	fault  func(r *http.Request) (status int, retryAfter string, body string)
}

func newDevQueen(t *testing.T) (*devQueen, string) {
	t.Helper()
	return newDevQueenTokens(t, nil)
}

// newDevQueenTokens is newDevQueen with auth on when tokens is not empty
// (bearer token → tenant and role).
func newDevQueenTokens(t *testing.T, tokens map[string]dev.Token) (*devQueen, string) {
	t.Helper()
	d := &devQueen{t: t, calls: map[string]int{}, bodies: map[string][]map[string]any{}}
	b := devbroker.Start(t, dev.Options{Faults: true, Logger: testLogger(), Tokens: tokens}, d.middleware)
	d.b, d.url, d.q = b.Broker, b.URL, b.Client
	return d, b.URL
}

// middleware counts the call under its route, keeps its body, and lets the
// fault answer it when that says so.
func (d *devQueen) middleware(inner http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.Method + " " + r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/api/v1/resources/queues/") {
			route = r.Method + " /api/v1/resources/queues/:queue"
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var decoded map[string]any
		_ = json.Unmarshal(body, &decoded)
		d.mu.Lock()
		d.calls[route]++
		d.bodies[route] = append(d.bodies[route], decoded)
		fault := d.fault
		d.mu.Unlock()
		if fault != nil {
			if status, ra, msg := fault(r); status != 0 {
				if ra != "" {
					w.Header().Set("Retry-After", ra)
				}
				w.WriteHeader(status)
				fmt.Fprint(w, msg)
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
}

func (d *devQueen) count(route string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[route]
}

func (d *devQueen) lastBody(route string) map[string]any {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.bodies[route]
	if len(b) == 0 {
		return nil
	}
	return b[len(b)-1]
}

func (d *devQueen) setFault(f func(r *http.Request) (int, string, string)) {
	d.mu.Lock()
	d.fault = f
	d.mu.Unlock()
}

// addQueue creates a queue natively with partitions 0..partitions-1
// materialised by one pushed message each, and returns its id.
func (d *devQueen) addQueue(name string, partitions int) string {
	d.t.Helper()
	ctx := context.Background()
	if _, err := d.q.Configure(ctx, name, nil); err != nil {
		d.t.Fatalf("configure %s: %v", name, err)
	}
	var items []queen.PushItem
	for p := 0; p < partitions; p++ {
		items = append(items, queen.PushItem{Queue: name, Partition: strconv.Itoa(p), Payload: json.RawMessage(`{"native":true}`)})
	}
	for len(items) > 0 {
		chunk := items[:min(len(items), 1000)]
		items = items[len(chunk):]
		if _, err := d.q.Push(ctx, chunk); err != nil {
			d.t.Fatalf("push %s: %v", name, err)
		}
	}
	q := d.queue(name)
	if q == nil {
		d.t.Fatalf("queue %s not listed", name)
	}
	return q.ID
}

// queue is the listing's entry for name, nil when absent.
func (d *devQueen) queue(name string) *queen.QueueInfo {
	d.t.Helper()
	qs, err := d.q.Queues(context.Background())
	if err != nil {
		d.t.Fatalf("queues: %v", err)
	}
	for _, q := range qs {
		if q.Name == name {
			return &q
		}
	}
	return nil
}

func (d *devQueen) putRow(key string, v any) {
	d.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.q.KV(context.Background(), []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: b, Forever: true}}); err != nil {
		d.t.Fatalf("put %s: %v", key, err)
	}
}

func (d *devQueen) delRow(key string) {
	d.t.Helper()
	if _, err := d.q.KV(context.Background(), []queen.KVOp{{Op: queen.OpDelete, NS: queen.Namespace, Key: key}}); err != nil {
		d.t.Fatalf("delete %s: %v", key, err)
	}
}

// record reads a qk:topiccfg: record, nil when absent.
func (d *devQueen) record(topic string) *catalogue.Record {
	d.t.Helper()
	rec, _, err := catalogue.ReadRecord(context.Background(), d.q, topic)
	if err != nil {
		d.t.Fatalf("read record %s: %v", topic, err)
	}
	return rec
}

// injectFault replaces the dev broker's fault rules through its own API.
func (d *devQueen) injectFault(rules ...dev.FaultRule) {
	d.t.Helper()
	b, _ := json.Marshal(map[string]any{"rules": rules})
	resp, err := http.Post(d.url+"/dev/faults", "application/json", bytes.NewReader(b))
	if err != nil {
		d.t.Fatalf("inject fault: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		d.t.Fatalf("inject fault: HTTP %d", resp.StatusCode)
	}
}
