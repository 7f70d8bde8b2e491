package queen

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// heardCall is one call an Observer heard.
type heardCall struct {
	route   string
	outcome Kind
}

type callRecorder struct {
	mu    sync.Mutex
	calls []heardCall
}

func (r *callRecorder) QueenCall(route string, outcome Kind, d time.Duration) {
	if d <= 0 {
		panic("a call observed with no duration")
	}
	r.mu.Lock()
	r.calls = append(r.calls, heardCall{route, outcome})
	r.mu.Unlock()
}

// TestObserverHearsEveryCall: each call, a derived client's included, is
// heard once with its route and outcome: a 429 a throttle, a 200 whose
// body does not decode a protocol failure, and a verdict read from a
// decoded body (an unconfirmed configure) a call that succeeded.
func TestObserverHearsEveryCall(t *testing.T) {
	status := 200
	body := `{"queues":[]}`
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
	rec := &callRecorder{}
	c, err := New(Config{URL: f.srv.URL, Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Queues(bg); err != nil {
		t.Fatal(err)
	}
	status = 429
	if _, err := c.As("other", "").Queues(bg); KindOf(err) != KindThrottled {
		t.Fatalf("429: %v", err)
	}
	status, body = 200, `not json`
	if _, err := c.Queues(bg); KindOf(err) != KindProtocol {
		t.Fatalf("undecodable 200: %v", err)
	}
	body = `{"configured":false}`
	if _, err := c.Configure(bg, "q", nil); KindOf(err) != KindProtocol {
		t.Fatalf("unconfirmed configure: %v", err)
	}
	want := []heardCall{{routeQueues, KindNone}, {routeQueues, KindThrottled}, {routeQueues, KindProtocol}, {routeConfigure, KindNone}}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.calls) != len(want) {
		t.Fatalf("heard %v, want %v", rec.calls, want)
	}
	for i := range want {
		if rec.calls[i] != want[i] {
			t.Fatalf("call %d heard as %v, want %v", i, rec.calls[i], want[i])
		}
	}
}
