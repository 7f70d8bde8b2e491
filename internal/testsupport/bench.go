package testsupport

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The dev broker's push and fetch benchmarks, once: queen/dev runs them
// against an in-process broker (charging the whole test process's CPU),
// cmd/queen-dev against the binary (charging the child's alone).

// BenchInFlight is how many requests a dev broker benchmark keeps in flight.
const BenchInFlight = 16

// BenchTarget is a dev broker under load: its base URL, the HTTP client to
// reach it, and the CPU time charged to it so far (0 where it cannot tell).
type BenchTarget struct {
	URL    string
	Client *http.Client
	CPU    func() time.Duration
}

// BenchPush pushes 1 KiB records in batches of 1, 100 and 500 (a
// sub-benchmark each, on a target of its own), BenchInFlight requests in
// flight, and reports records/s and cpu-s/Mrec.
func BenchPush(b *testing.B, target func(*testing.B) BenchTarget) {
	for _, batch := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchPush(b, target(b), batch) })
	}
}

func benchPush(b *testing.B, t BenchTarget, batch int) {
	bodies := make([][]byte, 8)
	for p := range bodies {
		bodies[p] = pushBody(p, batch)
	}
	url := t.URL + "/api/v1/push"
	var n atomic.Int64
	b.SetBytes(int64(batch * 1024))
	b.SetParallelism((BenchInFlight + 1) / 2)
	cpu0 := t.CPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var buf bytes.Buffer
		for i := 0; pb.Next(); i++ {
			post(b, t.Client, url, bodies[i%len(bodies)], http.StatusCreated, &buf)
			n.Add(int64(batch))
		}
	})
	b.StopTimer()
	reportBench(b, n.Load(), t.CPU()-cpu0)
}

// BenchFetch seeds 4 partitions with 20,000 1 KiB records each, then reads
// them in 1 MiB fetches at spread offsets, BenchInFlight in flight, and
// reports records/s and cpu-s/Mrec.
func BenchFetch(b *testing.B, target func(*testing.B) BenchTarget) {
	t := target(b)
	const parts, perPart = 4, 20000
	var buf bytes.Buffer
	for p := 0; p < parts; p++ {
		body := pushBody(p, 500)
		for done := 0; done < perPart; done += 500 {
			post(b, t.Client, t.URL+"/api/v1/push", body, http.StatusCreated, &buf)
		}
	}
	url := t.URL + "/api/v1/fetch"
	var n, seq atomic.Int64
	b.SetParallelism((BenchInFlight + 1) / 2)
	cpu0 := t.CPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var buf bytes.Buffer
		for pb.Next() {
			k := seq.Add(1)
			body := fmt.Sprintf(`{"entries":[{"queue":"bench","partition":"%d","offset":%d,"maxBytes":1048576}]}`, k%parts, (k*997)%(perPart-1100))
			out := post(b, t.Client, url, []byte(body), http.StatusOK, &buf)
			n.Add(int64(bytes.Count(out, []byte(`"offset":`))))
		}
	})
	b.StopTimer()
	reportBench(b, n.Load(), t.CPU()-cpu0)
}

func reportBench(b *testing.B, records int64, cpu time.Duration) {
	if secs := b.Elapsed().Seconds(); secs > 0 && records > 0 {
		b.ReportMetric(float64(records)/secs, "records/s")
		if cpu > 0 {
			b.ReportMetric(cpu.Seconds()/float64(records)*1e6, "cpu-s/Mrec")
		}
	}
}

// kibRecord is a 1 KiB record payload in the facade's envelope shape
// ({"k","t","v"}, padded with spaces to 1,024 bytes).
func kibRecord() string {
	v := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 740))
	p := `{"k":null,"t":1787824800123,"v":"` + v + `"}`
	return p + strings.Repeat(" ", 1024-len(p))
}

// pushBody is a POST /api/v1/push body of n kibRecords to queue "bench",
// partition part.
func pushBody(part, n int) []byte {
	rec := kibRecord()
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"queue":"bench","partition":"%d","payload":%s}`, part, rec)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// post sends body to url and reads the answer into buf (reused: the
// benchmark client should cost as little CPU as it can, it may share the
// process). A transport error or a status other than want is an Error of b,
// not fatal, as it runs inside RunParallel.
func post(b testing.TB, hc *http.Client, url string, body []byte, want int, buf *bytes.Buffer) []byte {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return nil
	}
	buf.Reset()
	_, _ = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Errorf("status %d: %.200s", resp.StatusCode, buf.Bytes())
	}
	return buf.Bytes()
}
