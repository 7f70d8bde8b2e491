package contract

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
)

// Client-side benchmarks against the shared queen-dev process. Each reports
// records/s and the CPU seconds the queen-dev PROCESS spent per million
// records (utime+stime from /proc/<pid>/stat around the timed region), so
// the facade's own benchmark can be compared against the broker's cost.
// b.N counts records.

const (
	benchInFlight = 8    // requests in flight
	benchValue    = 1024 // bytes of record value
	benchParts    = 4    // partitions written / read
)

// procCPU returns utime+stime of pid in seconds.
func procCPU(b *testing.B, pid int) float64 {
	b.Helper()
	d, err := testsupport.ProcCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return d.Seconds()
}

// benchPayload is a 1 KiB-valued record in the §11 envelope.
func benchPayload() []byte {
	v := make([]byte, benchValue)
	for i := range v {
		v[i] = byte(i * 7)
	}
	return envelope.Append(nil, &envelope.Record{Key: []byte("bench-key"), Value: v, Timestamp: 1787824800123})
}

// runLoad runs benchInFlight workers until together they have moved b.N
// records; do performs one request and returns how many records it moved.
// The last requests may overshoot b.N, so the metrics use the real count.
func runLoad(b *testing.B, do func(worker int) (int, error)) {
	b.Helper()
	pid := shared.Pid()
	var moved atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	cpu0 := procCPU(b, pid)
	start := time.Now()
	b.ResetTimer()
	for w := 0; w < benchInFlight; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for moved.Load() < int64(b.N) {
				n, err := do(w)
				if err != nil {
					failed.Store(err)
					return
				}
				moved.Add(int64(n))
			}
		}(w)
	}
	wg.Wait()
	b.StopTimer()
	elapsed := time.Since(start).Seconds()
	cpu := procCPU(b, pid) - cpu0
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	n := float64(moved.Load())
	b.ReportMetric(n/elapsed, "records/s")
	b.ReportMetric(cpu/n*1e6, "dev-cpu-s/Mrec")
}

// BenchmarkPush: 1 KiB records in batches of 1, 100 and 500, several
// requests in flight, through queen.Client.
func BenchmarkPush(b *testing.B) {
	payload := benchPayload()
	for _, batch := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			c := shared.client(b, "")
			queue := uniq(fmt.Sprintf("bench-push-%d", batch))
			items := make([][]queen.PushItem, benchInFlight)
			for w := range items {
				items[w] = make([]queen.PushItem, batch)
				for i := range items[w] {
					items[w][i] = queen.PushItem{Queue: queue, Partition: strconv.Itoa(w % benchParts), Payload: payload}
				}
			}
			b.SetBytes(int64(len(payload)))
			runLoad(b, func(w int) (int, error) {
				res, err := c.Push(ctx, items[w])
				if err != nil {
					return 0, err
				}
				if res[0].Status != queen.StatusQueued {
					return 0, fmt.Errorf("status %q", res[0].Status)
				}
				return len(res), nil
			})
		})
	}
}

// BenchmarkFetch: reads of a pre-filled log with the default 1 MiB entry
// budget, several requests in flight, each request one entry.
func BenchmarkFetch(b *testing.B) {
	const fill = 20000 // records per partition
	c := shared.client(b, "")
	queue := uniq("bench-fetch")
	payload := benchPayload()
	for p := 0; p < benchParts; p++ {
		for done := 0; done < fill; done += 500 {
			items := make([]queen.PushItem, 500)
			for i := range items {
				items[i] = queen.PushItem{Queue: queue, Partition: strconv.Itoa(p), Payload: payload}
			}
			if _, err := c.Push(ctx, items); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(int64(len(payload)))
	var offsets [benchInFlight]int64
	runLoad(b, func(w int) (int, error) {
		part := strconv.Itoa(w % benchParts)
		res, err := c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: queue, Partition: part, Offset: offsets[w]}}, MinBytes: 1})
		if err != nil {
			return 0, err
		}
		n := len(res[0].Records)
		if n == 0 {
			return 0, fmt.Errorf("fetch at %d returned nothing (hwm %d)", offsets[w], res[0].HighWatermark)
		}
		offsets[w] = (res[0].Records[n-1].Offset + 1) % fill
		return n, nil
	})
}
