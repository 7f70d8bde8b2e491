package node

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// BenchmarkKgoProduceServed is the e2e produce benchmark's shape (1 KiB
// records, acks=all, idempotent, lz4, franz-go at a 2 ms linger) against a
// served node and an in-process queen-dev, so that the facade's whole
// produce path — connection loop, handler, Queen client — can be profiled
// with -cpuprofile in one process.
func BenchmarkKgoProduceServed(b *testing.B) {
	addr, err := testsupport.FreeAddr()
	if err != nil {
		b.Fatal(err)
	}
	e := newDataEnv(b, dev.Options{}, map[string]string{"QUEEN_KAFKA_ADDR": addr, "QUEEN_KAFKA_ADVERTISED_ADDR": addr, "QUEEN_KAFKA_DEFAULT_PARTITIONS": "8"})
	serveBenchNode(b, e.n)
	// 1KiB: the e2e benchmark's shape, few large requests. small: 100-byte
	// records with no linger, many small requests (where coalescing them
	// into one push is what counts).
	b.Run("1KiB", func(b *testing.B) { kgoProduce(b, addr, 20000, 1024, 2*time.Millisecond) })
	b.Run("small", func(b *testing.B) { kgoProduce(b, addr, 20000, 100, 0) })
}

func kgoProduce(b *testing.B, addr string, n, size int, linger time.Duration) {
	value := []byte(strings.Repeat("q", size))
	b.SetBytes(int64(n * size))
	for i := 0; i < b.N; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(strings.ReplaceAll("bench-"+b.Name()+"-"+strconv.Itoa(i), "/", "-")), kgo.AllowAutoTopicCreation(),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
			kgo.ProducerLinger(linger), kgo.MaxBufferedRecords(n))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		var failed atomic.Int64
		var wg sync.WaitGroup
		wg.Add(n)
		for j := 0; j < n; j++ {
			cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(j)), Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
				wg.Done()
			})
		}
		wg.Wait()
		cancel()
		cl.Close()
		if f := failed.Load(); f > 0 {
			b.Fatalf("%d records failed", f)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rec/s")
}

// serveBenchNode serves n on its configured address until the benchmark ends.
func serveBenchNode(b *testing.B, n *Node) {
	b.Helper()
	if _, err := n.Listen(); err != nil {
		b.Fatalf("listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Serve(context.Background()) }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		<-done
	})
}

// BenchmarkProduceVsDirectPush compares, in one process against the same
// in-memory queen-dev, a Kafka produce through the handler (100 x 1 KiB,
// lz4, idempotent) with pushing the same envelopes directly: the ratio the
// issue's throughput target is about, without the network.
func BenchmarkProduceVsDirectPush(b *testing.B) {
	e := newDataEnv(b, dev.Options{}, nil)
	e.createTopic("bench")
	recs := batchtest.BenchRecords(100, 1024)
	pid := int64(1 << 40)
	b.Run("facade", func(b *testing.B) {
		b.SetBytes(100 * 1024)
		pid++ // each run of the function is a new producer
		seq := int32(0)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			raw := batchtest.Batch{Codec: recordbatch.CodecLz4, Idem: true, PID: pid, FirstSeq: seq, FirstTS: time.Now().UnixMilli(), Records: recs}.Encode(b)
			b.StartTimer()
			resp, err := e.n.handleProduce(context.Background(), e.c, produceReq(9, -1, "bench", 0, raw))
			if err != nil || resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
				b.Fatal(err, resp)
			}
			seq += 100
		}
	})
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(100 * 1024)
		items := make([]queen.PushItem, len(recs))
		for i, r := range recs {
			items[i] = queen.PushItem{Queue: "bench", Partition: "1", Payload: envelope.Append(nil, &envelope.Record{Key: r.Key, Value: r.Value, Timestamp: 1})}
		}
		for b.Loop() {
			if _, err := e.q.Push(context.Background(), items); err != nil {
				b.Fatal(err)
			}
		}
	})
}
