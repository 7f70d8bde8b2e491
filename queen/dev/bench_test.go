package dev

import (
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// benchTarget is a durable broker (every 201 is fsynced) over real HTTP, in
// this process: the CPU charged is the whole process's, client and server.
func benchTarget(b *testing.B) testsupport.BenchTarget {
	b.Helper()
	br, err := New(Options{Dir: b.TempDir(), SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv := testsupport.Serve(b, br.Handler(), func() { br.Close() })
	const conns = 2 * testsupport.BenchInFlight
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	return testsupport.BenchTarget{URL: srv.URL, Client: hc, CPU: cpuTime}
}

// cpuTime is the process's user+system CPU time (client and server: the
// benchmark runs both in this process).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPush: 1 KiB records in batches of 1, 100 and 500, 16 requests
// in flight over real HTTP to a durable broker (every 201 is fsynced).
func BenchmarkPush(b *testing.B) { testsupport.BenchPush(b, benchTarget) }

// BenchmarkFetch: 1 MiB fetches (about 1000 records of 1 KiB) from a
// durable broker, 16 in flight.
func BenchmarkFetch(b *testing.B) {
	testsupport.BenchFetch(b, benchTarget)
}
