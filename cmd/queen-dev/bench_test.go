package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// These benchmarks run the real binary in a child process and charge only
// that process's CPU time (from /proc/<pid>/stat) to the records it served:
// the "cpu-s/Mrec" figure is the broker's own cost, not the load generator's.

// benchTarget is a durable queen-dev process in its default fsync mode
// (every 201's log record written; QUEEN_DEV_FSYNC).
func benchTarget(b *testing.B) testsupport.BenchTarget {
	p := start(b, "QUEEN_DEV_DATA="+b.TempDir())
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * testsupport.BenchInFlight}}
	return testsupport.BenchTarget{URL: p.url, Client: hc, CPU: func() time.Duration {
		d, _ := testsupport.ProcCPU(p.Pid()) // 0 where /proc is unavailable
		return d
	}}
}

// BenchmarkProcessPush: 1 KiB records, batches of 1, 100 and 500, 16
// requests in flight, durable (every 201 written), against the binary.
func BenchmarkProcessPush(b *testing.B) { testsupport.BenchPush(b, benchTarget) }

// BenchmarkProcessFetch: 1 MiB fetches of 1 KiB records, 16 in flight.
func BenchmarkProcessFetch(b *testing.B) {
	testsupport.BenchFetch(b, benchTarget)
}
