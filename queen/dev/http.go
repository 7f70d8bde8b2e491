package dev

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
)

// call is what a route handler gets: the caller's tenant and the body.
type call struct {
	tenant string
	body   []byte
}

type routeFunc func(w http.ResponseWriter, r *http.Request, c *call)

// Handler serves the contract's routes, GET /health, GET /status and, with
// Options.Faults, the fault-injection routes.
func (b *Broker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/resources/queues", b.route(routeQueues, RoleRead, noBody, b.handleQueues))
	mux.Handle("POST /api/v1/configure", b.route(routeConfigure, RoleReadWrite, pooledBody, b.handleConfigure))
	mux.Handle("DELETE /api/v1/resources/queues/{queue}", b.route(routeDelete, RoleAdmin, noBody, b.handleDelete))
	mux.Handle("POST /api/v1/push", b.route(routePush, RoleWrite, ownedBody, b.handlePush))
	mux.Handle("POST /api/v1/fetch", b.route(routeFetch, RoleRead, pooledBody, b.handleFetch))
	mux.Handle("POST /api/v1/kv", b.route(routeKV, RoleReadWrite, pooledBody, b.handleKV))
	mux.Handle("POST /api/v1/transaction", b.route(routeTxn, RoleReadWrite, pooledBody, b.handleTxn))
	mux.Handle("GET /auth/me", b.guard(routeAuthMe, b.handleAuthMe))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeBody(w, http.StatusOK, []byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /status", b.handleStatus)
	if b.opts.Faults {
		mux.HandleFunc("/dev/faults", b.handleFaults)
	}
	// Other methods on a contract path get a JSON 405 rather than the
	// mux's plain-text one.
	for _, path := range []string{"/api/v1/resources/queues", "/api/v1/configure", "/api/v1/resources/queues/{queue}",
		"/api/v1/push", "/api/v1/fetch", "/api/v1/kv", "/api/v1/transaction", "/auth/me", "/health", "/status"} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on "+r.URL.Path)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not found: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// Route names, as fault rules name them.
const (
	routeQueues    = "queues"
	routeConfigure = "configure"
	routeDelete    = "delete"
	routePush      = "push"
	routeFetch     = "fetch"
	routeKV        = "kv"
	routeTxn       = "transaction"
	routeAuthMe    = "authme"
)

// guard is the outermost layer of every contract route: a panic becomes a
// 500 with a log line (validation should have caught the input; this is the
// last resort), and injected faults run before anything else.
func (b *Broker) guard(name string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				b.panics.Add(1)
				b.log.Error("queen-dev: handler panic", "route", name, "panic", v, "stack", string(debug.Stack()))
				writeError(w, http.StatusInternalServerError, "internal error")
			}
		}()
		if b.opts.Faults && b.injectFault(w, r, name) {
			return
		}
		h(w, r)
	})
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// bodyUse is how a route's handler holds its request body.
type bodyUse int

const (
	noBody bodyUse = iota
	// pooledBody: read into a pooled buffer, reused once the handler
	// returns; the handler copies what it keeps.
	pooledBody
	// ownedBody: read into a buffer of its own, which the handler may
	// keep (the push route's stored payloads alias it, sparing a copy of
	// every push body).
	ownedBody
)

// route authenticates, reads the body under the size cap, and calls h.
func (b *Broker) route(name string, need Role, use bodyUse, h routeFunc) http.Handler {
	return b.guard(name, func(w http.ResponseWriter, r *http.Request) {
		tok, ok := b.authenticate(w, r, need)
		if !ok {
			return
		}
		c := &call{tenant: tok.Tenant}
		if use == noBody {
			h(w, r, c)
			return
		}
		if r.ContentLength > b.maxBody {
			writeError(w, http.StatusRequestEntityTooLarge, "payload too large")
			return
		}
		var buf *bytes.Buffer
		if use == ownedBody {
			buf = bytes.NewBuffer(make([]byte, 0, max(r.ContentLength, 0)+bytes.MinRead))
		} else {
			buf = bodyPool.Get().(*bytes.Buffer)
			buf.Reset()
			defer func() {
				if buf.Cap() <= 8<<20 {
					bodyPool.Put(buf)
				}
			}()
			if r.ContentLength > 0 {
				buf.Grow(int(r.ContentLength) + bytes.MinRead)
			}
		}
		_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, b.maxBody))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeError(w, http.StatusRequestEntityTooLarge, "payload too large")
				return
			}
			writeError(w, http.StatusBadRequest, "bad body: "+err.Error())
			return
		}
		// A pooled body's handler copies what it keeps (json.RawMessage
		// decoding copies), so the buffer can be reused after h returns.
		c.body = buf.Bytes()
		h(w, r, c)
	})
}

// fromLoopback reports whether the TCP peer is a loopback address.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// drainBody discards an unread body so keep-alive connections survive.
func drainBody(r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
}
