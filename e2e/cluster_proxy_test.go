package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// queenProxy sits between one facade and queen-dev. It can fail pushes
// AFTER forwarding them (pushFault): queen-dev stores the records and the
// facade never learns it, either because the answer is dropped with the
// connection or because a 503 replaces it, which is the lost answer durable
// idempotence exists for (issue 9). It counts the facade's
// KV calls (queen-dev keeps no counter, and the registry's cost to Queen is
// a benchmark figure), and it can hold KV calls matching a predicate until
// released: the only way to make a call that already passed the facade's
// ownership check reach the store after the cluster moved on, which is the
// stale-owner race the group fence exists for. A held call whose client
// gives up is answered 504 and never forwarded.
type queenProxy struct {
	url     string
	kvCalls atomic.Int64
	// kvWrites is how many operations of those calls write (put, delete,
	// putIfAbsent, incr), the cost a benchmark reports per record.
	kvWrites atomic.Int64
	// fetching is how many fetch calls are at queen-dev now (a long poll
	// parked there counts until it is answered or its caller gives up).
	fetching atomic.Int64

	// pushFault, when set, decides for each push (counted from 1) whether
	// to lose its answer, and how; faulted counts the pushes it did.
	pushFault atomic.Pointer[func(n int64) pushLoss]
	pushes    atomic.Int64
	faulted   atomic.Int64
	// pushDelay holds every push's answer this long after queen-dev gave
	// it (nanoseconds): a facade killed meanwhile never learns its push
	// was stored.
	pushDelay atomic.Int64

	mu      sync.Mutex
	hold    func(body []byte) bool // nil: forward everything at once
	release chan struct{}          // closed by releaseAll
	held    chan []byte            // bodies as they are held, for the test to wait on
}

func startQueenProxy(t testing.TB, upstream string) *queenProxy {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatalf("proxy upstream %q: %v", upstream, err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	// A facade killed mid-call is routine here; answer 502 without a log line.
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	p := &queenProxy{release: make(chan struct{}), held: make(chan []byte, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/push" {
			loss := keepAnswer
			if f := p.pushFault.Load(); f != nil {
				loss = (*f)(p.pushes.Add(1))
			}
			if delay := time.Duration(p.pushDelay.Load()); loss != keepAnswer || delay > 0 {
				rec := httptest.NewRecorder()
				rp.ServeHTTP(rec, r) // stored upstream, whatever happens to the answer
				time.Sleep(delay)
				if loss != keepAnswer {
					p.faulted.Add(1)
					loseAnswer(w, loss)
					return
				}
				maps.Copy(w.Header(), rec.Header())
				w.WriteHeader(rec.Code)
				w.Write(rec.Body.Bytes())
				return
			}
		}
		if r.URL.Path == "/api/v1/kv" {
			p.kvCalls.Add(1)
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			p.kvWrites.Add(kvWriteOps(body))
			p.mu.Lock()
			hold, release := p.hold, p.release
			p.mu.Unlock()
			if hold != nil && hold(body) {
				select {
				case p.held <- body:
				default:
				}
				select {
				case <-release:
				case <-r.Context().Done():
					w.WriteHeader(http.StatusGatewayTimeout)
					return
				}
			}
		}
		if r.URL.Path == "/api/v1/fetch" {
			p.fetching.Add(1)
			defer p.fetching.Add(-1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.releaseAll()
		srv.Close()
	})
	p.url = srv.URL
	return p
}

// kvWriteOps is how many operations of a POST /api/v1/kv body write.
func kvWriteOps(body []byte) int64 {
	var req queen.KVRequest
	if json.Unmarshal(body, &req) != nil {
		return 0
	}
	var n int64
	for _, op := range req.Operations {
		switch op.Op {
		case queen.OpPut, queen.OpDelete, queen.OpPutIfAbsent, queen.OpIncr:
			n++
		}
	}
	return n
}

// holdKV holds every KV call for which match is true from now on. Calls
// already held stay held (a new predicate widens or narrows what is held
// next, never frees anything); releaseAll frees them all.
func (p *queenProxy) holdKV(match func(body []byte) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold == nil {
		p.release = make(chan struct{})
	}
	p.hold = match
}

// releaseAll forwards every held call and stops holding.
func (p *queenProxy) releaseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold != nil {
		p.hold = nil
		close(p.release)
	}
}

// pushLoss is how a forwarded push's answer is lost.
type pushLoss int

const (
	keepAnswer pushLoss = iota
	dropAnswer          // the connection is closed with no answer
	answer503           // 503 replaces the 201
)

// loseAnswer loses a forwarded call's answer as loss says.
func loseAnswer(w http.ResponseWriter, loss pushLoss) {
	if loss == answer503 {
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":"unavailable"}`, http.StatusServiceUnavailable)
		return
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // closes the connection without an answer
}

// failPushes loses the answer of every every-th push, limit times, as loss
// says; every 0 stops.
func (p *queenProxy) failPushes(every, limit int64, loss pushLoss) {
	if every == 0 {
		p.pushFault.Store(nil)
		return
	}
	f := func(n int64) pushLoss {
		if n%every == 0 && p.faulted.Load() < limit {
			return loss
		}
		return keepAnswer
	}
	p.pushFault.Store(&f)
}
