package e2e

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 13's Fetch compression target, side by side in one run: the same
// 50,000 records of the produce targets' workload (1 KiB values, half
// random alphanumerics, half a repeated phrase; 6 partitions) stored in
// two topics, compression.type=uncompressed and compression.type=lz4, each
// read from the start by a fresh franz-go consumer in every round (the
// order alternating). Measured per record: the Fetch answers' bytes on the
// wire (kgo's broker-read hook, Fetch responses only) and the facade
// process's CPU (/proc) while the consumer read them.
const (
	fetchCompRecords = 50000
	fetchCompRounds  = 5
)

// fetchBytesHook counts the bytes of Fetch responses a client read.
type fetchBytesHook struct{ n atomic.Int64 }

func (h *fetchBytesHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, bytesRead int, _, _ time.Duration, _ error) {
	if key == kmsg.Fetch.Int16() {
		h.n.Add(int64(bytesRead))
	}
}

// consumeAll reads every record of topic from the start and returns the
// Fetch bytes the consumer read.
func consumeAll(b *testing.B, seeds []string, topic string, n int) int64 {
	offs := map[int32]kgo.Offset{}
	for p := int32(0); p < targetPartitions; p++ {
		offs[p] = kgo.NewOffset().AtStart()
	}
	h := &fetchBytesHook{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.WithHooks(h),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("consumed %d of %d records of %s", got, n, topic)
		}
		fs.EachError(func(t string, p int32, err error) { b.Fatalf("fetch %s[%d]: %v", t, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) != benchValueBytes {
				b.Fatalf("record of %d bytes", len(r.Value))
			}
			got++
		})
	}
	return h.n.Load()
}

func BenchmarkFetchCompression(b *testing.B) {
	for range b.N {
		dev := startQueenDev(b, devOptions{})
		fac := startFacade(b, dev, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(targetPartitions), "LOG_LEVEL": "warn"})
		seeds := []string{fac.addr}
		adm := newAdmin(b, seeds)
		topics := map[string]string{"uncompressed": uniq("bench-fetch-plain"), "lz4": uniq("bench-fetch-lz4")}
		for codec, topic := range topics {
			res, err := adm.CreateTopic(ctxT(b, 15*time.Second), targetPartitions, 1, map[string]*string{"compression.type": kadm.StringPtr(codec)}, topic)
			if err != nil || res.Err != nil {
				b.Fatalf("create %s: %v %v", topic, err, res.Err)
			}
		}
		prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.ProducerLinger(targetLinger), kgo.MaxBufferedRecords(fetchCompRecords))
		if err != nil {
			b.Fatal(err)
		}
		for _, topic := range topics {
			for i := range fetchCompRecords {
				prod.Produce(context.Background(), &kgo.Record{Topic: topic, Value: targetValues[i%len(targetValues)]}, func(_ *kgo.Record, err error) {
					if err != nil {
						b.Errorf("produce: %v", err)
					}
				})
			}
		}
		if err := prod.Flush(ctxT(b, 2*time.Minute)); err != nil {
			b.Fatal(err)
		}
		prod.Close()

		wire := map[string][]float64{}
		cpu := map[string][]float64{}
		var wireRatio, cpuRatio []float64
		for r := range fetchCompRounds {
			order := []string{"uncompressed", "lz4"}
			if r%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, codec := range order {
				c0 := cpuSeconds(fac.pid())
				n := consumeAll(b, seeds, topics[codec], fetchCompRecords)
				cpu[codec] = append(cpu[codec], (cpuSeconds(fac.pid())-c0)/fetchCompRecords*1e6)
				wire[codec] = append(wire[codec], float64(n)/fetchCompRecords)
			}
			wireRatio = append(wireRatio, wire["lz4"][r]/wire["uncompressed"][r])
			cpuRatio = append(cpuRatio, cpu["lz4"][r]/cpu["uncompressed"][r])
		}
		f := func(xs []float64) string {
			s := spreadOf(xs)
			return strconv.FormatFloat(s.min, 'g', 3, 64) + " / " + strconv.FormatFloat(s.med, 'g', 3, 64) + " / " + strconv.FormatFloat(s.max, 'g', 3, 64)
		}
		b.Logf("issue 13 fetch compression, %d records, %d rounds (min / median / max):", fetchCompRecords, fetchCompRounds)
		b.Logf("  wire bytes per record: uncompressed %s, lz4 %s, ratio lz4/uncompressed %s", f(wire["uncompressed"]), f(wire["lz4"]), f(wireRatio))
		b.Logf("  facade CPU us per record: uncompressed %s, lz4 %s, ratio lz4/uncompressed %s", f(cpu["uncompressed"]), f(cpu["lz4"]), f(cpuRatio))
		for _, m := range []struct {
			name string
			xs   []float64
		}{{"wire_B/rec_plain", wire["uncompressed"]}, {"wire_B/rec_lz4", wire["lz4"]}, {"wire_lz4_over_plain", wireRatio},
			{"cpu_us/rec_plain", cpu["uncompressed"]}, {"cpu_us/rec_lz4", cpu["lz4"]}, {"cpu_lz4_over_plain", cpuRatio}} {
			s := spreadOf(m.xs)
			b.ReportMetric(s.min, m.name+"_min")
			b.ReportMetric(s.med, m.name+"_median")
			b.ReportMetric(s.max, m.name+"_max")
		}
	}
}
