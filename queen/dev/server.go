package dev

import (
	"log"
	"net/http"
	"time"
)

// connLimits bound what one connection can hold: a peer that stops sending
// or stops reading gives back its socket and goroutine (a field of Broker so
// tests can shorten them).
type connLimits struct {
	// header is the time a request's headers may take (slowloris).
	header time.Duration
	// rate is the slowest transfer, in bytes per second, still served: the
	// largest body gets header + MaxBodyBytes/rate to arrive.
	rate int64
	// idle is how long a keep-alive connection may wait for its next
	// request. Longer than the facade's 90 s IdleConnTimeout, so the client
	// always closes an idle connection first: a server close racing the
	// client's reuse of it would fail a request.
	idle time.Duration
}

var defaultLimits = connLimits{header: 10 * time.Second, rate: 1 << 20, idle: 2 * time.Minute}

// maxAnswerBytes is the largest answer a route renders (a fetch's rendered
// body cap), for the write budget.
const maxAnswerBytes = 64 << 20

// transfer is what n bytes may take at the slowest rate served.
func (l connLimits) transfer(n int64) time.Duration {
	return time.Duration(n) * time.Second / time.Duration(l.rate)
}

// bodyTime is what a body of n bytes may take to arrive, headers included.
func (l connLimits) bodyTime(n int64) time.Duration { return l.header + l.transfer(n) }

// Server is the http.Server cmd/queen-dev serves b with: b's Handler behind
// timeouts that close slow or silent connections without cutting an honest
// request short.
//
//   - ReadHeaderTimeout: 10 s for the headers.
//   - ReadTimeout: the headers plus the largest body (MaxBodyBytes) at 1 MiB/s
//     (74 s by default). net/http clears the read deadline once a request's
//     body has been read, so a long poll (fetch's maxWaitMs, up to 30 s, §6)
//     or an injected hang is not cut by it. (A per-request deadline set by a
//     handler would be: it would land on the server's background read and
//     cancel the request's context when it passes.)
//   - WriteTimeout: the read budget, plus the longest a request may be held
//     (30 s, or 120 s with fault injection on), plus the largest answer
//     (64 MiB) at 1 MiB/s, counted from the end of the headers.
//   - IdleTimeout: 2 min between requests on a keep-alive connection.
func (b *Broker) Server(errorLog *log.Logger) *http.Server {
	l := b.limits
	read := l.bodyTime(b.maxBody)
	held := maxFetchWait
	if b.opts.Faults {
		held = maxHang
	}
	return &http.Server{
		Handler:           b.Handler(),
		ReadHeaderTimeout: l.header,
		ReadTimeout:       read,
		WriteTimeout:      read + held + l.transfer(maxAnswerBytes),
		IdleTimeout:       l.idle,
		ErrorLog:          errorLog,
	}
}
