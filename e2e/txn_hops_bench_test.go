package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// hopLog records every call a cluster's nodes make to Queen while on:
// when it began (from start), the node, route, request and answer bytes,
// its time and its KV ops.
type hopLog struct {
	mu    sync.Mutex
	start time.Time
	lines []string
	kv    int // KV calls logged, but the registry's heartbeats
	bytes int // their request and answer bytes
	on    bool
}

// proxy is a pass-through to upstream for node that logs each call.
func (h *hopLog) proxy(b *testing.B, node int, upstream string) string {
	target, err := url.Parse(upstream)
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		t0 := time.Now()
		rp.ServeHTTP(rec, r)
		d := time.Since(t0)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.on || r.URL.Path == "/api/v1/resources/queues" {
			return
		}
		var req struct {
			Operations []struct {
				Op     string   `json:"op"`
				Key    string   `json:"key"`
				Prefix string   `json:"prefix"`
				Keys   []string `json:"keys"`
			} `json:"operations"`
		}
		if r.URL.Path == "/api/v1/kv" {
			_ = json.Unmarshal(body, &req) // a transaction's ops are pushes: its bytes say enough
		}
		ops := map[string]int{}
		var order []string
		heartbeat := false
		for _, o := range req.Operations {
			k := o.Key + o.Prefix
			if len(o.Keys) > 0 {
				k = o.Keys[0]
			}
			family, _, _ := strings.Cut(strings.TrimPrefix(k, "qk:"), ":")
			heartbeat = heartbeat || family == "node"
			name := o.Op + "(qk:" + family + ")"
			if ops[name] == 0 {
				order = append(order, name)
			}
			ops[name]++
		}
		if heartbeat {
			return
		}
		var parts []string
		for _, name := range order {
			parts = append(parts, fmt.Sprintf("%d×%s", ops[name], name))
		}
		if r.URL.Path == "/api/v1/kv" {
			h.kv++
			h.bytes += len(body) + rec.Body.Len()
		}
		h.lines = append(h.lines, fmt.Sprintf("+%7.2f ms node %d %s: %d B in, %d B out, %.2f ms %s", float64(t0.Sub(h.start))/1e6, node, r.URL.Path, len(body), rec.Body.Len(), float64(d)/1e6, strings.Join(parts, " ")))
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

func (h *hopLog) mark(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, fmt.Sprintf("+%7.2f ms ", float64(time.Since(h.start))/1e6)+fmt.Sprintf(format, args...))
}

// BenchmarkTxnHops (issue 23, item 4) lists the hops of one cluster-mode
// transaction: the franz-go producer of BenchmarkTxnVsKfake (KIP-890, 1
// KiB records, 8 partitions) against three nodes, each behind a logging
// proxy to one queen-dev, warmed by five transactions of 100 records;
// then each of three transactions is logged call by call (the registry's
// heartbeats left out): every call to Queen, its bytes and time, and when
// the producer flushed and EndTxn answered. The metrics are the KV calls
// and bytes of one transaction (the stage cleanup of the one before
// included when it lands within the window).
func BenchmarkTxnHops(b *testing.B) {
	const size = 100
	env := map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(benchPartitions), "LOG_LEVEL": "warn"}
	requireBin(b, queenKafkBin)
	dev := startQueenDev(b, devOptions{})
	h := &hopLog{}
	run := uniq("qk")
	c := &testCluster{dev: dev, tb: b}
	for id := 1; id <= 3; id++ {
		f := newFacade(h.proxy(b, id, dev.url), freePort(b), nodeEnv(id, fmt.Sprintf("node-%d-%s", id, run), env))
		f.Name = fmt.Sprintf("node-%d@%s", id, f.addr)
		c.nodes = append(c.nodes, launchFacade(b, f))
	}
	for id := 1; id <= 3; id++ {
		c.waitBrokers(b, id, []int32{1, 2, 3}, 10*time.Second)
	}
	addrs := c.addrs()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(uniq("hops")), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(size), kgo.TransactionalID(uniq("tid-hops")))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(b, 2*time.Minute)
	txn := func() {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		for i := range size {
			cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: benchValue}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		h.mark("flushed; EndTxn")
		t0 := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
		h.mark("committed (EndTxn %.2f ms)", float64(time.Since(t0))/1e6)
	}
	for range 5 {
		txn()
	}
	var calls, bytes []float64
	for range b.N {
		for range 3 {
			h.mu.Lock()
			h.on, h.start, h.lines, h.kv, h.bytes = true, time.Now(), nil, 0, 0
			h.mu.Unlock()
			txn()
			time.Sleep(200 * time.Millisecond) // the stage cleanup, in the background
			h.mu.Lock()
			h.on = false
			b.Logf("one transaction of %d records, load %s:\n%s", size, loadAvg(), strings.Join(h.lines, "\n"))
			calls, bytes = append(calls, float64(h.kv)), append(bytes, float64(h.bytes))
			h.mu.Unlock()
		}
	}
	b.ReportMetric(spreadOf(calls).med, "kv-calls/txn")
	b.ReportMetric(spreadOf(bytes).med, "kv-bytes/txn")
}
