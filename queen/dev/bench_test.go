package dev

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
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

// BenchmarkPushKeyed is the push the facade sends behind an idempotent
// producer: batches of 100 1 KiB records of one partition (6 in turn),
// each with a transactionId of its own (so every record writes its dedup
// entry), 16 in flight to a durable broker.
func BenchmarkPushKeyed(b *testing.B) {
	t := benchTarget(b)
	const batch, parts = 100, 6
	rec := `{"k":null,"t":1787824800123,"v":"` + strings.Repeat("eHh4", 250) + `"}`
	var seq atomic.Int64
	body := func() []byte {
		k := seq.Add(1)
		var sb strings.Builder
		sb.WriteString(`{"items":[`)
		for i := range batch {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"queue":"bench","partition":"%d","payload":%s,"transactionId":"p1-e0-s%d"}`, k%parts, rec, k*batch+int64(i))
		}
		sb.WriteString(`]}`)
		return []byte(sb.String())
	}
	var n atomic.Int64
	b.SetParallelism((testsupport.BenchInFlight + 1) / 2)
	cpu0 := t.CPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := t.Client.Post(t.URL+"/api/v1/push", "application/json", bytes.NewReader(body()))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				b.Errorf("status %d", resp.StatusCode)
			}
			n.Add(batch)
		}
	})
	b.StopTimer()
	if secs := b.Elapsed().Seconds(); secs > 0 {
		b.ReportMetric(float64(n.Load())/secs, "records/s")
		b.ReportMetric((t.CPU()-cpu0).Seconds()/float64(n.Load())*1e6, "cpu-s/Mrec")
	}
}
