package e2e

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
)

// The produce targets of issue 13, side by side in one run: one franz-go
// producer, 1 KiB values (half random alphanumerics, half a repeated
// phrase), 6 partitions, acks=all, idempotent, linger 5 ms, no compression,
// producing as fast as it can for a window. Each round runs three sides in
// a rotating order: the facade (a real process in front of a real
// queen-dev), the same envelopes pushed straight to queen-dev, and the same
// producer against franz-go's in-memory kfake (in this process). A fourth
// side, the produce floor (bench_produce_floor_test.go), is the same
// producer against the simplest process that does the format's work
// (CRC, envelopes, push body over HTTP, Produce answer) and nothing else:
// target (a)'s facade CPU is reported as a multiple of it, round by round.
const (
	targetPartitions = 6
	targetWindow     = 4 * time.Second
	targetRounds     = 5
	targetLinger     = 5 * time.Millisecond
)

// targetValues are the values the producers cycle through: each 1 KiB,
// 512 random alphanumerics then 512 bytes of a repeated phrase.
var targetValues = testsupport.ProduceValues(4096, benchValueBytes, 13)

// windowResult is one side's round: records/s, each record's produce
// latency in ms (Produce call to its promise), and the records acked.
type windowResult struct {
	rate    float64
	lat     []float64
	records int
}

// produceWindow runs the workload's producer against seeds for
// targetWindow, then flushes, and returns what it measured.
func produceWindow(b testing.TB, seeds []string, topic string) windowResult {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(targetLinger))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(b, 2*time.Minute)
	// Metadata and the producer id are warmed outside the window.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: targetValues[0]}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	var (
		mu     sync.Mutex
		lat    = make([]float64, 0, 1<<18)
		failed atomic.Int64
	)
	start := time.Now()
	n := 0
	for ; time.Since(start) < targetWindow; n++ {
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: targetValues[n%len(targetValues)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				return
			}
			d := float64(time.Since(sent).Nanoseconds()) / 1e6
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		})
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d records failed", f, n)
	}
	return windowResult{rate: float64(n) / el.Seconds(), lat: lat, records: n}
}

// pushWindow pushes the workload's envelopes straight to queen-dev for
// targetWindow: batches of 100 records of one partition, the partitions in
// turn, 8 calls in flight (pushDirect), each record with the dedup key
// (transactionId) the facade gives an idempotent record, so that queen-dev
// does the same work as behind the facade.
func pushWindow(b *testing.B, q *queen.Client, topic string) float64 {
	const batch = 100
	pid := rand.Int64N(1 << 40)
	seq := make([]int32, targetPartitions)
	start := time.Now()
	i, n := 0, 0
	return pushDirect(b, q, func() []queen.PushItem {
		if time.Since(start) >= targetWindow {
			return nil
		}
		p := i % targetPartitions
		i++
		part := strconv.Itoa(p)
		keys := producer.DedupKeys(pid, 0, seq[p], batch)
		seq[p] += batch
		now := time.Now().UnixMilli()
		items := make([]queen.PushItem, batch)
		for j := range items {
			rec := envelope.Record{Value: targetValues[n%len(targetValues)], Timestamp: now}
			items[j] = queen.PushItem{Queue: topic, Partition: part, Payload: envelope.Append(nil, &rec), TransactionID: keys[j]}
			n++
		}
		return items
	})
}

// BenchmarkProduceTargets measures issue 13's three produce targets in one
// run: (a) the facade process's CPU-seconds per million records (from
// /proc), (b) records/s through the facade ÷ the same envelopes pushed
// straight to queen-dev, and (c) produce p99 through the facade ÷ p99
// against kfake. Each is reported min/median/max over targetRounds rounds,
// with the floor's CPU-seconds per million records and facade ÷ floor.
func BenchmarkProduceTargets(b *testing.B) {
	for range b.N {
		dev := startQueenDev(b, devOptions{})
		env := map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(targetPartitions), "LOG_LEVEL": "warn"}
		profiles := os.Getenv("QK_BENCH_PROFILE_DIR")
		opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(b))
		if profiles != "" {
			env["QUEEN_KAFKA_HTTP_ADDR"] = opsAddr
		}
		fac := startFacade(b, dev, env)
		base := baselineFacade(b, dev, env)
		q, err := queen.New(queen.Config{URL: dev.url})
		if err != nil {
			b.Fatal(err)
		}
		kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(targetPartitions))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(kf.Close)
		sink := startProduceSink(b)
		fl, floorAddr := startProduceFloor(b, sink.url, false)
		// queen-dev's floor: a second floor pushing to the file sink, a
		// process that reads the push bodies and appends them to a file.
		fs, fsURL := startFileSink(b)
		_, fileFloorAddr := startProduceFloor(b, fsURL, false)

		var fileSinkCPU []float64
		var floorCPU, overFloor, hwm, baseCPU, baseHWM, devCPU, oldDevCPU, oldFacCPU, clientCPU, kfakeCPU []float64
		var cpu, facadeRate, directRate, kfakeRate, rateRatio, facadeP99, kfakeP99, p99Ratio, facadeP50, kfakeP50 []float64
		var fw, kw windowResult
		var dr float64
		sides := []func(){
			func() {
				if profiles != "" {
					defer profileFacade(b, opsAddr, profiles, strconv.Itoa(len(cpu)), targetWindow-time.Second)()
				}
				c0, d0, peak := cpuSeconds(fac.pid()), cpuSeconds(dev.pid()), roundPeak(b, fac.pid())
				s0 := cpuSeconds(os.Getpid())
				fw = produceWindow(b, []string{fac.addr}, uniq("bench-targets"))
				clientCPU = append(clientCPU, (cpuSeconds(os.Getpid())-s0)/float64(fw.records)*1e6)
				cpu, hwm = append(cpu, (cpuSeconds(fac.pid())-c0)/float64(fw.records)*1e6), append(hwm, peak())
				devCPU = append(devCPU, (cpuSeconds(dev.pid())-d0)/float64(fw.records)*1e6)
			},
			func() { dr = pushWindow(b, q, uniq("bench-targets-direct")) },
			func() {
				// kfake runs in this process: its whole broker is this
				// process's CPU in its window less the producer's own, as
				// measured in the facade's window (the same client).
				s0 := cpuSeconds(os.Getpid())
				kw = produceWindow(b, kf.ListenAddrs(), uniq("bench-targets-kfake"))
				kfakeCPU = append(kfakeCPU, (cpuSeconds(os.Getpid())-s0)/float64(kw.records)*1e6)
			},
			func() {
				c0, i0 := cpuSeconds(fl.Pid()), sink.items.Load()
				w := produceWindow(b, []string{floorAddr}, uniq("bench-targets-floor"))
				floorCPU = append(floorCPU, (cpuSeconds(fl.Pid())-c0)/float64(w.records)*1e6)
				// Every record acked went through the sink (retries may add more).
				if got := sink.items.Load() - i0; got < int64(w.records) {
					b.Fatalf("floor acked %d records, its sink saw %d", w.records, got)
				}
			},
			func() {
				c0 := cpuSeconds(fs.Pid())
				w := produceWindow(b, []string{fileFloorAddr}, uniq("bench-targets-filesink"))
				fileSinkCPU = append(fileSinkCPU, (cpuSeconds(fs.Pid())-c0)/float64(w.records)*1e6)
			},
		}
		// QK_BENCH_BASELINE_DEV_BIN: another queen-dev binary (e.g. one
		// built from an older commit) behind a facade of this build, as a
		// side of its own, for a before/after of queen-dev in one run.
		if bin := os.Getenv("QK_BENCH_BASELINE_DEV_BIN"); bin != "" {
			old := newQueenDev(b.TempDir(), freePort(b), devOptions{})
			old.Bin = bin
			b.Cleanup(old.kill)
			if err := old.start(); err != nil {
				b.Fatalf("%v\n%s", err, old.Out.From(0))
			}
			oldFac := startFacade(b, old, env)
			sides = append(sides, func() {
				c0, d0 := cpuSeconds(oldFac.pid()), cpuSeconds(old.pid())
				w := produceWindow(b, []string{oldFac.addr}, uniq("bench-targets-olddev"))
				oldFacCPU = append(oldFacCPU, (cpuSeconds(oldFac.pid())-c0)/float64(w.records)*1e6)
				oldDevCPU = append(oldDevCPU, (cpuSeconds(old.pid())-d0)/float64(w.records)*1e6)
			})
		}
		if base != nil {
			sides = append(sides, func() {
				c0, peak := cpuSeconds(base.pid()), roundPeak(b, base.pid())
				w := produceWindow(b, []string{base.addr}, uniq("bench-targets-baseline"))
				baseCPU, baseHWM = append(baseCPU, (cpuSeconds(base.pid())-c0)/float64(w.records)*1e6), append(baseHWM, peak())
			})
		}
		for r := range targetRounds {
			for i := range sides {
				sides[(r+i)%len(sides)]()
			}
			facadeRate, directRate, rateRatio = append(facadeRate, fw.rate), append(directRate, dr), append(rateRatio, fw.rate/dr)
			kfakeRate = append(kfakeRate, kw.rate)
			fp99, kp99 := percentile(fw.lat, .99), percentile(kw.lat, .99)
			facadeP99, kfakeP99, p99Ratio = append(facadeP99, fp99), append(kfakeP99, kp99), append(p99Ratio, fp99/kp99)
			facadeP50, kfakeP50 = append(facadeP50, percentile(fw.lat, .5)), append(kfakeP50, percentile(kw.lat, .5))
			overFloor = append(overFloor, cpu[r]/floorCPU[r])
		}
		f := func(xs []float64) string {
			s := spreadOf(xs)
			return strconv.FormatFloat(s.min, 'g', 3, 64) + " / " + strconv.FormatFloat(s.med, 'g', 3, 64) + " / " + strconv.FormatFloat(s.max, 'g', 3, 64)
		}
		b.Logf("issue 13 produce targets, %d rounds of %s (min / median / max):", targetRounds, targetWindow)
		b.Logf("  (a) facade CPU-s per 1M records: %s (target <= 3.0); facade VmHWM MiB %s (issue 20 target <= 96 MB)", f(cpu), f(hwm))
		if base != nil {
			b.Logf("  baseline %s, same rounds: CPU-s per 1M records %s; VmHWM MiB %s", os.Getenv("QK_BENCH_BASELINE_BIN"), f(baseCPU), f(baseHWM))
		}
		b.Logf("  floor CPU-s per 1M records: %s; facade ÷ floor %s (same round)", f(floorCPU), f(overFloor))
		b.Logf("  queen-dev CPU-s per 1M records behind the facade (same windows): %s; queen-dev ÷ facade %s", f(devCPU), f(ratios(devCPU, cpu)))
		b.Logf("  file sink CPU-s per 1M records (reads the same kind of push bodies, answers them and appends them to a file): %s; queen-dev ÷ its median %.2f",
			f(fileSinkCPU), spreadOf(devCPU).med/spreadOf(fileSinkCPU).med)
		kfakeNet := make([]float64, min(len(kfakeCPU), len(clientCPU)))
		for i := range kfakeNet {
			kfakeNet[i] = kfakeCPU[i] - clientCPU[i]
		}
		b.Logf("  kfake whole broker CPU-s per 1M records (this process in its window, less the producer's share in the facade's): %s; facade + queen-dev %s",
			f(kfakeNet), f(sums(cpu, devCPU)))
		if oldDevCPU != nil {
			b.Logf("  baseline queen-dev %s behind a facade, same rounds: queen-dev CPU-s per 1M records %s, its facade %s, ratio %s",
				os.Getenv("QK_BENCH_BASELINE_DEV_BIN"), f(oldDevCPU), f(oldFacCPU), f(ratios(oldDevCPU, oldFacCPU)))
		}
		b.Logf("  (b) rec/s facade %s, direct %s, ratio %s (target >= 0.95); kfake %s", f(facadeRate), f(directRate), f(rateRatio), f(kfakeRate))
		b.Logf("  (c) p99 ms facade %s, kfake %s, ratio %s (target <= 2); p50 ms facade %s, kfake %s",
			f(facadeP99), f(kfakeP99), f(p99Ratio), f(facadeP50), f(kfakeP50))
		noPanics(b, fac, base)
		for _, m := range []struct {
			name string
			xs   []float64
		}{{"facade_cpu-s/Mrec", cpu}, {"queendev_cpu-s/Mrec", devCPU}, {"filesink_cpu-s/Mrec", fileSinkCPU}, {"facade_VmHWM_MiB", hwm}, {"floor_cpu-s/Mrec", floorCPU}, {"facade_over_floor", overFloor}, {"facade_over_direct", rateRatio}, {"p99_facade_over_kfake", p99Ratio}} {
			s := spreadOf(m.xs)
			b.ReportMetric(s.min, m.name+"_min")
			b.ReportMetric(s.med, m.name+"_median")
			b.ReportMetric(s.max, m.name+"_max")
		}
	}
}

// sums is a[i]+b[i], round by round.
func sums(a, b []float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = a[i] + b[i]
	}
	return out
}

// profileFacade starts taking a CPU and an allocation profile of the facade
// (its /debug/pprof over QUEEN_KAFKA_HTTP_ADDR) for d, and returns a func
// that waits for them and writes them to dir as cpu-<name>.pprof and
// allocs-<name>.pprof, with a snapshot of the heap in use halfway through
// as heap-<name>.pprof. QK_BENCH_PROFILE_DIR turns it on; the profiles cost
// the facade some CPU, so figures from such a run are not the targets'.
func profileFacade(b *testing.B, opsAddr, dir, name string, d time.Duration) func() {
	secs := strconv.Itoa(max(int(d/time.Second), 1))
	var wg sync.WaitGroup
	for _, kind := range []string{"profile", "allocs"} {
		wg.Go(func() {
			resp, err := http.Get("http://" + opsAddr + "/debug/pprof/" + kind + "?seconds=" + secs)
			if err != nil {
				b.Errorf("profile %s: %v", kind, err)
				return
			}
			defer resp.Body.Close()
			kindName := map[string]string{"profile": "cpu", "allocs": "allocs"}[kind]
			out, err := os.Create(filepath.Join(dir, kindName+"-"+name+".pprof"))
			if err == nil {
				_, err = io.Copy(out, resp.Body)
				err = errors.Join(err, out.Close())
			}
			if err != nil {
				b.Errorf("profile %s: %v", kind, err)
			}
		})
	}
	// The heap in use is a snapshot (as of the last collection), taken
	// mid-window, when the produce path holds what it holds under load.
	wg.Go(func() {
		time.Sleep(d / 2)
		resp, err := http.Get("http://" + opsAddr + "/debug/pprof/heap")
		if err != nil {
			b.Errorf("profile heap: %v", err)
			return
		}
		defer resp.Body.Close()
		out, err := os.Create(filepath.Join(dir, "heap-"+name+".pprof"))
		if err == nil {
			_, err = io.Copy(out, resp.Body)
			err = errors.Join(err, out.Close())
		}
		if err != nil {
			b.Errorf("profile heap: %v", err)
		}
	})
	return wg.Wait
}
