package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// queenProxy sits between one facade and queen-dev. It counts the facade's
// KV calls (queen-dev keeps no counter, and the registry's cost to Queen is
// a benchmark figure), and it can hold KV calls matching a predicate until
// released: the only way to make a call that already passed the facade's
// ownership check reach the store after the cluster moved on, which is the
// stale-owner race the group fence exists for. A held call whose client
// gives up is answered 504 and never forwarded.
type queenProxy struct {
	url     string
	kvCalls atomic.Int64
	// fetching is how many fetch calls are at queen-dev now (a long poll
	// parked there counts until it is answered or its caller gives up).
	fetching atomic.Int64

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
		if r.URL.Path == "/api/v1/kv" {
			p.kvCalls.Add(1)
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
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
