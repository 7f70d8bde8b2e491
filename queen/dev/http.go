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
	mux.Handle("POST /api/v1/push", b.route(routePush, RoleWrite, pooledBody, b.handlePush))
	mux.Handle("POST /api/v1/fetch", b.route(routeFetch, RoleRead, pooledBody, b.handleFetch))
	mux.Handle("POST /api/v1/kv", b.route(routeKV, RoleReadWrite, pooledBody, b.handleKV))
	mux.Handle("POST /api/v1/transaction", b.route(routeTxn, RoleReadWrite, pooledBody, b.handleTxn))
	mux.Handle("GET /auth/me", b.guard(routeAuthMe, b.handleAuthMe))
	mux.Handle("GET /api/v1/consumer-groups", b.route(routeGroups, RoleRead, noBody, b.handleConsumerGroups))
	mux.Handle("GET /api/v1/pop/queue/{queue}", b.route(routePop, RoleRead, noBody, b.handlePop))
	mux.Handle("GET /api/v1/pop/queue/{queue}/partition/{partition}", b.route(routePop, RoleRead, noBody, b.handlePop))
	mux.Handle("POST /api/v1/ack", b.route(routeAck, RoleRead, pooledBody, b.handleAck))
	mux.Handle("POST /api/v1/ack/batch", b.route(routeAck, RoleRead, pooledBody, b.handleAckBatch))
	mux.Handle("POST /api/v1/lease/{leaseId}/extend", b.route(routeAck, RoleRead, pooledBody, b.handleExtend))
	mux.Handle("GET /api/v1/pop", b.route(routePop, RoleRead, noBody, b.handlePop))
	mux.Handle("GET /api/v1/dlq", b.route(routeDLQ, RoleRead, noBody, b.handleDLQ))
	mux.Handle("DELETE /api/v1/dlq", b.route(routeDLQ, RoleReadWrite, noBody, b.handlePurgeDLQ))
	mux.Handle("POST /api/v1/dlq/{id}/replay", b.route(routeDLQ, RoleReadWrite, pooledBody, b.handleDLQReplay))
	mux.Handle("POST /api/v1/messages/{partitionId}/{transactionId}/retry", b.route(routeDLQ, RoleReadWrite, noBody, b.handleRetryMessage))
	mux.Handle("GET /api/v1/consumer-groups/lagging", b.route(routeGroups, RoleRead, noBody, b.handleLagging))
	mux.Handle("GET /api/v1/consumer-groups/{group}", b.route(routeGroups, RoleRead, noBody, b.handleGroupDetails))
	mux.Handle("DELETE /api/v1/consumer-groups/{group}", b.route(routeGroups, RoleReadWrite, noBody, b.handleDeleteGroup))
	mux.Handle("DELETE /api/v1/consumer-groups/{group}/queues/{queue}", b.route(routeGroups, RoleReadWrite, noBody, b.handleDeleteGroup))
	mux.Handle("POST /api/v1/consumer-groups/{group}/subscription", b.route(routeGroups, RoleReadWrite, pooledBody, b.handleSubscription))
	mux.Handle("POST /api/v1/consumer-groups/{group}/queues/{queue}/seek", b.route(routeGroups, RoleReadWrite, pooledBody, b.handleSeek))
	mux.Handle("POST /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek", b.route(routeGroups, RoleReadWrite, pooledBody, b.handleSeek))
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
		"/api/v1/push", "/api/v1/fetch", "/api/v1/kv", "/api/v1/transaction", "/auth/me", "/health", "/status", "/api/v1/consumer-groups", "/api/v1/pop", "/api/v1/dlq"} {
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
	routeGroups    = "groups"
	routePop       = "pop"
	routeAck       = "ack"
	routeDLQ       = "dlq"
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

// bodyPool holds the pooled routes' body buffers up to smallBody.
var bodyPool = sync.Pool{New: func() any { return new([]byte) }}

// smallBody is the largest buffer bodyPool keeps.
const smallBody = 8 << 20

// bigBodies keeps the last buffers past smallBody, up to the body ceiling,
// for the requests that declare more than smallBody: a transaction's commit
// body is 10-55 MB at a 100 ms commit interval, and dropped after each
// commit it was read anew into a buffer grown by doubling (zeroed and
// copied at each step). Not a sync.Pool: such a commit allocates several
// times its body (its batch), so a GC or two runs between two commits and
// would empty the pool. One: queen-dev's memory budget is 256 MB, and a
// commit at the ceiling holds its body and a batch of its size anyway, so
// the one kept adds to the peak only while no big commit runs.
var bigBodies = make(chan *[]byte, 1)

// takeBody is a buffer for a body of declared bytes (-1 unknown).
func takeBody(declared int64) *[]byte {
	if declared > smallBody {
		select {
		case p := <-bigBodies:
			return p
		default:
		}
	}
	return bodyPool.Get().(*[]byte)
}

// keepBody returns p, holding body (whose requests are over), to where
// its size belongs; past maxBody (a body of unknown length grown by
// doubling) it is dropped.
func keepBody(p *[]byte, body []byte, maxBody int64) {
	*p = body[:0]
	switch {
	case cap(body) <= smallBody:
		bodyPool.Put(p)
	case int64(cap(body)) <= maxBody+bytes.MinRead:
		select {
		case bigBodies <- p:
		default:
		}
	}
}

// bodySlack: a buffer grown to a declared length gets 1/bodySlack of it
// more. The buffers are pooled, and the facade's pushes (a producer's
// request each, 1.5–3 MB) differ by a little from one to the next: sized
// exactly, the next larger body outgrew the buffer it was given at its
// last bytes, and was copied whole into a new one, almost every push (6%
// of queen-dev's CPU under the produce benchmark, memory freshly faulted in).
const bodySlack = 8

// bodyStart is the most a body's buffer grows to before any of the body
// has arrived: Content-Length is only the client's word.
const bodyStart = 64 << 10

// readBody appends what body yields up to its end to dst. The buffer grows
// with what has arrived, doubling, never with what the client declared: a
// peer declaring the whole maxBody and sending nothing holds 64 KiB, not
// 64 MiB. declared (the Content-Length, -1 if unknown) only caps each
// growth, so that a truthful body ends in a buffer of its size, MinRead
// (room to read its end) and an eighth more (bodySlack).
func readBody(dst []byte, body io.Reader, declared int64) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			got := len(dst) - start
			grow := max(got, bodyStart)
			if rest := declared - int64(got); rest >= 0 {
				grow = int(min(int64(grow), rest+bytes.MinRead+declared/bodySlack))
			}
			dst = append(make([]byte, 0, len(dst)+grow), dst...)
		}
		n, err := body.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// bodyUse is how a route's handler holds its request body.
type bodyUse int

const (
	noBody bodyUse = iota
	// pooledBody: read into a pooled buffer, reused once the handler
	// returns; the handler copies what it keeps (a push's payloads go
	// into its engine batch, which owns its memory).
	pooledBody
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
		var body []byte
		if use == pooledBody {
			p := takeBody(r.ContentLength)
			body = (*p)[:0]
			// Once h has returned: it applied the request (or refused it)
			// and wrote the answer, and nothing it started reads the body.
			defer func() { keepBody(p, body, b.maxBody) }()
		}
		body, err := readBody(body, http.MaxBytesReader(w, r.Body, b.maxBody), r.ContentLength)
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
		c.body = body
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
