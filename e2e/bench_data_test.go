package e2e

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
)

// The data-path benchmarks compare the facade with the same work done
// directly against queen-dev, in one run, alternating, so that the ratio
// holds while a small noisy machine drifts. They report min/median/max of
// each side and the median ratio; run them with -benchtime 1x (make bench).

const (
	benchRecords    = 20000
	benchPartitions = 8
	benchValueBytes = 1024
	benchRounds     = 3
)

var benchValue = []byte(strings.Repeat("q", benchValueBytes))

// cpuSeconds is the user+system CPU a process has used so far (0 where
// /proc cannot tell).
func cpuSeconds(pid int) float64 {
	d, _ := testsupport.ProcCPU(pid)
	return d.Seconds()
}

type spread struct{ min, med, max float64 }

func spreadOf(xs []float64) spread {
	s := slices.Clone(xs)
	slices.Sort(s)
	return spread{s[0], s[len(s)/2], s[len(s)-1]}
}

func (s spread) String() string { return fmt.Sprintf("%.0f/%.0f/%.0f", s.min, s.med, s.max) }

// roundPeak starts a round's peak memory: it lowers the process's VmHWM to
// its resident set now and returns a func that reads the peak since, in
// MiB (0 where /proc cannot tell). The process's peak over its life is the
// largest round's. Where the peak cannot be lowered the round's figure is
// the process's peak so far, and the benchmark says so.
func roundPeak(tb testing.TB, pid int) func() float64 {
	if err := testsupport.ResetPeakMemory(pid); err != nil {
		tb.Logf("VmHWM not reset (%v): this round's peak is the process's peak so far", err)
	}
	return func() float64 {
		_, peak, _ := testsupport.ProcMemory(pid)
		return float64(peak) / (1 << 20)
	}
}

// baselineFacade starts, when QK_BENCH_BASELINE_BIN names a facade binary
// (a build of another commit), that facade too, beside dev with env, so a
// benchmark can alternate rounds between it and this tree's build; nil
// when unset.
func baselineFacade(b *testing.B, dev *queenDev, env map[string]string) *facade {
	bin := os.Getenv("QK_BENCH_BASELINE_BIN")
	if bin == "" {
		return nil
	}
	return launchFacade(b, newFacadeOf(bin, dev.url, freePort(b), env))
}

// noPanics fails the benchmark when a facade it ran logged a panic (a
// recovered handler panic or the runtime's own): a figure of a run that
// dropped connections is not one (issue 20: a benchmark's four panics
// went unnoticed). Nil facades (no baseline) are skipped.
func noPanics(b *testing.B, fs ...*facade) {
	for _, f := range fs {
		if f == nil {
			continue
		}
		for _, l := range strings.Split(f.Out.String(), "\n") {
			if strings.Contains(l, "panic:") || strings.Contains(l, "handler panic") {
				b.Errorf("%s logged a panic: %s", f.Name, l)
			}
		}
	}
}

// produceViaFacade sends n 1 KiB records with acks=all, idempotence and lz4
// and returns records/s.
func produceViaFacade(b *testing.B, seeds []string, topic string, n int) float64 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(n))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(b, 2*time.Minute)
	// Warm the metadata and the producer id outside the timed part.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: benchValue}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	var failed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(n)
	start := time.Now()
	for i := 0; i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: benchValue}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	el := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d records failed through the facade", f)
	}
	return float64(n) / el.Seconds()
}

// produceDirect pushes the same records, as envelopes, straight to
// queen-dev in batches of 100 per partition with several calls in flight.
func produceDirect(b *testing.B, q *queen.Client, topic string, n int) float64 {
	const batch = 100
	now := time.Now().UnixMilli()
	i := 0
	return pushDirect(b, q, func() []queen.PushItem {
		if i >= n {
			return nil
		}
		p := strconv.Itoa((i / batch) % benchPartitions)
		items := make([]queen.PushItem, 0, batch)
		for j := i; j < i+batch && j < n; j++ {
			rec := envelope.Record{Key: []byte(strconv.Itoa(j)), Value: benchValue, Timestamp: now}
			items = append(items, queen.PushItem{Queue: topic, Partition: p, Payload: envelope.Append(nil, &rec)})
		}
		i += batch
		return items
	})
}

// pushDirect pushes the batches next gives until it gives none, with
// directInFlight calls in flight, and returns records/s.
func pushDirect(b *testing.B, q *queen.Client, next func() []queen.PushItem) float64 {
	const directInFlight = 8
	ctx := ctxT(b, 2*time.Minute)
	batches := make(chan []queen.PushItem, directInFlight)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range directInFlight {
		wg.Go(func() {
			for items := range batches {
				if _, err := q.Push(ctx, items); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	start := time.Now()
	n := 0
	for items := next(); items != nil; items = next() {
		n += len(items)
		batches <- items
	}
	close(batches)
	wg.Wait()
	el := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d direct pushes failed", f)
	}
	return float64(n) / el.Seconds()
}

// BenchmarkProduceFacadeVsDirect: produce throughput through the facade
// against the same records pushed directly, and the facade's CPU-seconds
// per million records and peak resident set (VmHWM) per round. With
// QK_BENCH_BASELINE_BIN set, a facade of that binary produces the same
// load in the same rounds, alternating which goes first, and its figures
// are reported beside.
func BenchmarkProduceFacadeVsDirect(b *testing.B) {
	for range b.N {
		dev := startQueenDev(b, devOptions{})
		env := map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(benchPartitions), "LOG_LEVEL": "warn"}
		fac := startFacade(b, dev, env)
		base := baselineFacade(b, dev, env)
		q, err := queen.New(queen.Config{URL: dev.url})
		if err != nil {
			b.Fatal(err)
		}
		var viaFacade, direct, ratio, cpu, hwm []float64
		var baseRate, baseCPU, baseHWM []float64
		for r := 0; r < benchRounds; r++ {
			produce := func(f *facade) (rate, cpuPerM, peak float64) {
				c0, peakSince := cpuSeconds(f.pid()), roundPeak(b, f.pid())
				rate = produceViaFacade(b, []string{f.addr}, uniq("bench-produce"), benchRecords)
				return rate, (cpuSeconds(f.pid()) - c0) / float64(benchRecords) * 1e6, peakSince()
			}
			if base != nil && r%2 == 1 {
				f, c, m := produce(base)
				baseRate, baseCPU, baseHWM = append(baseRate, f), append(baseCPU, c), append(baseHWM, m)
			}
			f, c, m := produce(fac)
			cpu, hwm = append(cpu, c), append(hwm, m)
			if base != nil && r%2 == 0 {
				f, c, m := produce(base)
				baseRate, baseCPU, baseHWM = append(baseRate, f), append(baseCPU, c), append(baseHWM, m)
			}
			d := produceDirect(b, q, uniq("bench-direct"), benchRecords)
			viaFacade, direct, ratio = append(viaFacade, f), append(direct, d), append(ratio, f/d)
		}
		fs, ds, rs, cs, ms := spreadOf(viaFacade), spreadOf(direct), spreadOf(ratio), spreadOf(cpu), spreadOf(hwm)
		b.Logf("produce 1 KiB acks=all idempotent lz4, %d records x %d rounds: facade rec/s min/med/max %s, direct %s, ratio med %.2f (min %.2f max %.2f); facade CPU-s per 1M records %.1f/%.1f/%.1f; facade VmHWM MiB %s",
			benchRecords, benchRounds, fs, ds, rs.med, rs.min, rs.max, cs.min, cs.med, cs.max, ms)
		if base != nil {
			bc := spreadOf(baseCPU)
			b.Logf("baseline %s, same rounds: facade rec/s min/med/max %s; CPU-s per 1M records %.1f/%.1f/%.1f; VmHWM MiB %s",
				os.Getenv("QK_BENCH_BASELINE_BIN"), spreadOf(baseRate), bc.min, bc.med, bc.max, spreadOf(baseHWM))
		}
		noPanics(b, fac, base)
		b.ReportMetric(fs.med, "facade-rec/s")
		b.ReportMetric(ds.med, "direct-rec/s")
		b.ReportMetric(rs.med, "ratio")
		b.ReportMetric(cs.med, "facade-cpu-s/Mrec")
		b.ReportMetric(ms.med, "facade-VmHWM-MiB")
		b.ReportMetric(ms.max, "facade-VmHWM-MiB_max")
	}
}

// latencyViaFacade produces to seeds (a facade or any Kafka) at a fixed
// offered rate for d, with linger 0, cycling through values compressed
// with codec, and returns each record's produce-to-delivery latency in ms,
// measured by a consumer of every partition against the wall clock the
// producer stamped in the record's key (both in this process), and each
// record's produce-to-acknowledgement latency (its promise) in ms.
func latencyViaFacade(b *testing.B, seeds []string, topic string, rate int, d time.Duration, values [][]byte, codec kgo.CompressionCodec) (lat, acked []float64) {
	return latencyRun(b, seeds, topic, rate, d, values, codec, true)
}

// latencyOfAcks is latencyViaFacade's producer alone, for a broker that
// serves no Fetch: each record's produce-to-acknowledgement latency in ms.
func latencyOfAcks(b *testing.B, seeds []string, topic string, rate int, d time.Duration, values [][]byte, codec kgo.CompressionCodec) []float64 {
	_, acked := latencyRun(b, seeds, topic, rate, d, values, codec, false)
	return acked
}

// latencyRun is latencyViaFacade, with the consumer (and lat) only when
// consume is set.
func latencyRun(b *testing.B, seeds []string, topic string, rate int, d time.Duration, values [][]byte, codec kgo.CompressionCodec, consume bool) (lat, acked []float64) {
	ctx := ctxT(b, time.Minute)
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(codec))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	total := int(float64(rate) * d.Seconds())
	lat, acked = make([]float64, 0, total), make([]float64, 0, total)
	var ackMu sync.Mutex
	done := make(chan struct{})
	if consume {
		cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(5*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		defer cons.Close()
		// Let the consumer reach the end before offering load.
		cons.PollRecords(ctxT(b, 3*time.Second), 1)
		go func() {
			defer close(done)
			for len(lat) < total && ctx.Err() == nil {
				fs := cons.PollFetches(ctx)
				fs.EachRecord(func(r *kgo.Record) {
					if sent, err := strconv.ParseInt(string(r.Key), 10, 64); err == nil {
						lat = append(lat, float64(time.Now().UnixNano()-sent)/1e6)
					}
				})
			}
		}()
	} else {
		close(done)
	}
	n := 0
	pace(rate, total, func() {
		sent := time.Now()
		prod.Produce(ctx, &kgo.Record{Key: []byte(strconv.FormatInt(sent.UnixNano(), 10)), Value: values[n%len(values)]}, func(_ *kgo.Record, err error) {
			if err == nil {
				ackMu.Lock()
				acked = append(acked, float64(time.Since(sent).Nanoseconds())/1e6)
				ackMu.Unlock()
			}
		})
		n++
	})
	<-done
	if err := prod.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	ackMu.Lock()
	defer ackMu.Unlock()
	return lat, acked
}

func latencyDirect(b *testing.B, q *queen.Client, topic string, rate int, d time.Duration) []float64 {
	ctx := ctxT(b, time.Minute)
	total := int(float64(rate) * d.Seconds())
	lat := make([]float64, 0, total)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var next int64
		for len(lat) < total && ctx.Err() == nil {
			res, err := q.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: topic, Partition: "0", Offset: next}}, MaxWaitMs: 5000, MinBytes: 1})
			if err != nil {
				continue
			}
			for _, r := range res[0].Records {
				rec := envelope.DecodePayload(r.Payload, time.Time{})
				if sent, err := strconv.ParseInt(string(rec.Key), 10, 64); err == nil {
					lat = append(lat, float64(time.Now().UnixNano()-sent)/1e6)
				}
				next = r.Offset + 1
			}
		}
	}()
	pace(rate, total, func() {
		rec := envelope.Record{Key: []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), Value: benchValue, Timestamp: -1}
		go q.Push(ctx, []queen.PushItem{{Queue: topic, Partition: "0", Payload: envelope.Append(nil, &rec)}})
	})
	<-done
	return lat
}

// pace calls send total times at rate per second.
func pace(rate, total int, send func()) {
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; i < total; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		send()
	}
}

func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// BenchmarkLatencyFacadeVsDirect: produce-to-consume latency at a fixed
// offered rate through the facade (kgo producer and consumer, one
// partition) against a direct push and a direct fetch long poll.
func BenchmarkLatencyFacadeVsDirect(b *testing.B) {
	const rate, dur = 500, 3 * time.Second
	for range b.N {
		dev := startQueenDev(b, devOptions{})
		fac := startFacade(b, dev, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "1", "LOG_LEVEL": "warn"})
		q, err := queen.New(queen.Config{URL: dev.url})
		if err != nil {
			b.Fatal(err)
		}
		var fp50, fp99, dp50, dp99, ratio99 []float64
		for r := 0; r < benchRounds; r++ {
			fl, _ := latencyViaFacade(b, []string{fac.addr}, uniq("bench-lat"), rate, dur, [][]byte{benchValue}, kgo.Lz4Compression())
			dl := latencyDirect(b, q, uniq("bench-lat-direct"), rate, dur)
			fp50, fp99 = append(fp50, percentile(fl, .5)), append(fp99, percentile(fl, .99))
			dp50, dp99 = append(dp50, percentile(dl, .5)), append(dp99, percentile(dl, .99))
			ratio99 = append(ratio99, percentile(fl, .99)/percentile(dl, .99))
		}
		f50, f99, d50, d99, r99 := spreadOf(fp50), spreadOf(fp99), spreadOf(dp50), spreadOf(dp99), spreadOf(ratio99)
		b.Logf("latency at %d rec/s for %s x %d rounds (ms, min/med/max): facade p50 %.1f/%.1f/%.1f p99 %.1f/%.1f/%.1f; direct p50 %.1f/%.1f/%.1f p99 %.1f/%.1f/%.1f; p99 ratio med %.2f",
			rate, dur, benchRounds, f50.min, f50.med, f50.max, f99.min, f99.med, f99.max, d50.min, d50.med, d50.max, d99.min, d99.med, d99.max, r99.med)
		b.ReportMetric(f50.med, "facade-p50-ms")
		b.ReportMetric(f99.med, "facade-p99-ms")
		b.ReportMetric(d99.med, "direct-p99-ms")
		b.ReportMetric(r99.med, "p99-ratio")
	}
}

// BenchmarkMetadataWideTopic: time and size of a Metadata answer for one
// topic of 100,000 partitions (the advertised-width clamp).
func BenchmarkMetadataWideTopic(b *testing.B) {
	dev := startQueenDev(b, devOptions{})
	fac := startFacade(b, dev, map[string]string{"LOG_LEVEL": "warn"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(fac.addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(b, time.Minute)
	topic := uniq("wide")
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 100000, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	req := metadataReq(topic)
	req.Version = 9
	var size int
	b.ResetTimer()
	for range b.N {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			b.Fatal(err)
		}
		if got := len(resp.Topics[0].Partitions); got != 100000 {
			b.Fatalf("%d partitions, want 100000", got)
		}
		size = len(resp.AppendTo(nil))
	}
	b.ReportMetric(float64(size), "bytes/answer")
}
