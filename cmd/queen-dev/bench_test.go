package main

import (
	"bytes"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// These benchmarks run the real binary in a child process and charge only
// that process's CPU time (from /proc/<pid>/stat) to the records it served:
// the "cpu-s/Mrec" figure is the broker's own cost, not the load generator's.

const inFlight = 16

// procCPU is the child's user+system time; 0 where /proc is unavailable.
func procCPU(pid int) time.Duration {
	d, _ := testsupport.ProcCPU(pid)
	return d
}

func benchProc(b *testing.B) (*proc, *http.Client) {
	p := start(b, "QUEEN_DEV_DATA="+b.TempDir())
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * inFlight}}
	return p, hc
}

func reportProc(b *testing.B, records int64, cpu time.Duration) {
	if secs := b.Elapsed().Seconds(); secs > 0 && records > 0 {
		b.ReportMetric(float64(records)/secs, "records/s")
		if cpu > 0 {
			b.ReportMetric(cpu.Seconds()/float64(records)*1e6, "cpu-s/Mrec")
		}
	}
}

// BenchmarkProcessPush: 1 KiB records, batches of 1, 100 and 500, 16
// requests in flight, durable (every 201 fsynced), against the binary.
func BenchmarkProcessPush(b *testing.B) {
	for _, batch := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			p, hc := benchProc(b)
			bodies := make([][]byte, 8)
			for i := range bodies {
				bodies[i] = testsupport.PushBody(i, batch)
			}
			url := p.url + "/api/v1/push"
			var n atomic.Int64
			b.SetBytes(int64(batch * 1024))
			b.SetParallelism((inFlight + 1) / 2)
			cpu0 := procCPU(p.Pid())
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var buf bytes.Buffer
				for i := 0; pb.Next(); i++ {
					testsupport.Post(b, hc, url, bodies[i%len(bodies)], http.StatusCreated, &buf)
					n.Add(int64(batch))
				}
			})
			b.StopTimer()
			reportProc(b, n.Load(), procCPU(p.Pid())-cpu0)
		})
	}
}

// BenchmarkProcessFetch: 1 MiB fetches of 1 KiB records, 16 in flight.
func BenchmarkProcessFetch(b *testing.B) {
	p, hc := benchProc(b)
	const parts, perPart = 4, 20000
	var buf bytes.Buffer
	for part := 0; part < parts; part++ {
		body := testsupport.PushBody(part, 500)
		for done := 0; done < perPart; done += 500 {
			testsupport.Post(b, hc, p.url+"/api/v1/push", body, http.StatusCreated, &buf)
		}
	}
	url := p.url + "/api/v1/fetch"
	var n, seq atomic.Int64
	b.SetParallelism((inFlight + 1) / 2)
	cpu0 := procCPU(p.Pid())
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
	reportProc(b, n.Load(), procCPU(p.Pid())-cpu0)
}
