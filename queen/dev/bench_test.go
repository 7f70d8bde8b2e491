package dev

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// benchInFlight is how many requests each benchmark keeps in flight.
const benchInFlight = 16

func benchServer(b *testing.B) (*Broker, *httptest.Server, *http.Client) {
	b.Helper()
	br, err := New(Options{Dir: b.TempDir(), SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	srv := testsupport.Serve(b, br.Handler(), func() { br.Close() })
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * benchInFlight, MaxConnsPerHost: 2 * benchInFlight}}
	return br, srv, hc
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

func report(b *testing.B, records int64, cpu time.Duration) {
	secs := b.Elapsed().Seconds()
	if secs > 0 && records > 0 {
		b.ReportMetric(float64(records)/secs, "records/s")
		b.ReportMetric(cpu.Seconds()/float64(records)*1e6, "cpu-s/Mrec")
	}
}

// BenchmarkPush: 1 KiB records in batches of 1, 100 and 500, 16 requests
// in flight over real HTTP to a durable broker (every 201 is fsynced).
func BenchmarkPush(b *testing.B) {
	for _, batch := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			_, srv, hc := benchServer(b)
			bodies := make([][]byte, 8)
			for p := range bodies {
				bodies[p] = testsupport.PushBody(p, batch)
			}
			url := srv.URL + "/api/v1/push"
			var n atomic.Int64
			b.SetBytes(int64(batch * 1024))
			b.SetParallelism((benchInFlight + 1) / 2)
			cpu0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				var buf bytes.Buffer
				for pb.Next() {
					testsupport.Post(b, hc, url, bodies[i%len(bodies)], http.StatusCreated, &buf)
					n.Add(int64(batch))
					i++
				}
			})
			b.StopTimer()
			report(b, n.Load(), cpuTime()-cpu0)
		})
	}
}

// BenchmarkFetch: 1 MiB fetches (about 1000 records of 1 KiB) from a
// durable broker, 16 in flight.
func BenchmarkFetch(b *testing.B) {
	_, srv, hc := benchServer(b)
	const parts, perPart = 4, 20000
	for p := 0; p < parts; p++ {
		body := testsupport.PushBody(p, 500)
		for done := 0; done < perPart; done += 500 {
			testsupport.Post(b, hc, srv.URL+"/api/v1/push", body, http.StatusCreated, new(bytes.Buffer))
		}
	}
	url := srv.URL + "/api/v1/fetch"
	var n, seq atomic.Int64
	b.SetParallelism((benchInFlight + 1) / 2)
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var buf bytes.Buffer
		for pb.Next() {
			k := seq.Add(1)
			body := fmt.Sprintf(`{"entries":[{"queue":"bench","partition":"%d","offset":%d,"maxBytes":1048576}]}`, k%parts, (k*997)%(perPart-1100))
			out := testsupport.Post(b, hc, url, []byte(body), http.StatusOK, &buf)
			n.Add(int64(bytes.Count(out, []byte(`"offset":`))))
		}
	})
	b.StopTimer()
	report(b, n.Load(), cpuTime()-cpu0)
}
