package dev

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// processCPU is this process's user and system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTxnRoute: queen-dev's POST /api/v1/transaction of the facade's
// commit body (n 1 KiB records over 8 partitions, the fence in the KV
// rider, fresh dedup keys each call) through the route's handler, on a
// store on disk (a temp dir) as queen-dev's is: the body read, the decode,
// the plan, the batch, its apply and fsync, and the answer. The figure is
// the p50 ms; QK_TXN_ROUTE_RECORDS=<n> adds a size (a 100 ms interval's
// transaction is 10,000–30,000 records).
func BenchmarkTxnRoute(b *testing.B) {
	sizes := []int{4000}
	if v, err := strconv.Atoi(os.Getenv("QK_TXN_ROUTE_RECORDS")); err == nil && v > 0 {
		sizes = append(sizes, v)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			br, err := New(Options{Dir: b.TempDir(), SweepInterval: -1, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer br.Close()
			h := br.Handler()
			items := facadeItems(n)
			var lat []float64
			var cpu time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				// The facade's keys: each partition's sequence goes on
				// from the last transaction's.
				for j := range items {
					items[j].TransactionID = "kafka:7:0:" + strconv.Itoa((i*n+j)/8)
				}
				body, err := json.Marshal(queen.TxnRequest{
					Operations: []queen.TxnOperation{{Type: "push", Items: items}},
					KV: []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:txn:bench",
						Value: json.RawMessage(`{"pid":7,"epoch":0,"state":"committed","seq":1}`), Forever: true, Required: true}},
				})
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(body)))
				req := httptest.NewRequest(http.MethodPost, "/api/v1/transaction", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				b.StartTimer()
				t0, c0 := time.Now(), processCPU()
				h.ServeHTTP(w, req)
				lat = append(lat, float64(time.Since(t0))/float64(time.Millisecond))
				cpu += processCPU() - c0
				b.StopTimer()
				if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes()[:min(w.Body.Len(), 100)], []byte(`"success":true`)) {
					b.Fatalf("%d %.300s", w.Code, w.Body.String())
				}
				b.StartTimer()
			}
			slices.Sort(lat)
			b.ReportMetric(lat[len(lat)/2], "p50-ms")
			// The process's CPU during the calls is steadier than wall time
			// on a shared machine (it includes the engine's background work
			// that ran meanwhile).
			b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(len(lat)), "cpu-ms/op")
		})
	}
}
