package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue 24's latency target, side by side in one run: end-to-end p50 at a
// steady 2,000 records/s through the facade (in front of queen-dev) at most
// 1.2 × kfake's. The workload is the produce targets' (targetValues: 1 KiB,
// no compression, targetPartitions partitions) offered at a fixed rate by
// one franz-go producer with linger 0, so that nothing but the path between
// the two clients adds to a record's latency; a franz-go consumer of every
// partition (latencyViaFacade) measures each record from the producer's
// clock in its key to its arrival in PollFetches, and the producer each
// record's acknowledgement.
//
// queen-dev acknowledges a write, and answers a read, once its log record
// is written (its default QUEEN_DEV_FSYNC). A third side runs the same
// facade build in front of a queen-dev with QUEEN_DEV_FSYNC=always, which
// waits for the record's fsync (group commit): the difference is what the
// disk's fsync adds to each record. A fourth runs one whose data directory
// is on tmpfs (/dev/shm), where a write to the log is a memory copy:
// tmpfs ÷ kfake is what the two processes and their hops add. The floors
// are the produce floor process (bench_produce_floor_test.go), which serves
// no Fetch: only their acknowledgements are measured, and compared with
// kfake's end-to-end and acknowledgement p50 of the same round. The hop
// is a bare round trip to an echo process (hopRoundTrips). With
// QK_BENCH_BASELINE_BIN (and QK_BENCH_BASELINE_DEV_BIN) another build's
// pair runs beside them: the before of a change, in the same rounds.
const (
	latencyTargetRate   = 2000
	latencyTargetWindow = 4 * time.Second
)

// latencySide is one side's figures over the rounds: each round's
// end-to-end and acknowledgement p50 and p99, in ms. A side with only set
// (a floor, which serves no Fetch; the hop) has only what it measures, as
// its ackP50 and ackP99.
type latencySide struct {
	name                     string
	metric                   string // its name in ReportMetric, where it has one
	seeds                    func() []string
	only                     func(*testing.B) []float64
	p50, p99, ackP50, ackP99 []float64
}

// floorSide is a side of the produce floor at addr: its producer's
// acknowledgements.
func floorSide(name, metric, addr string) *latencySide {
	return &latencySide{name: name + ": produce ack", metric: metric, only: func(b *testing.B) []float64 {
		return latencyOfAcks(b, []string{addr}, uniq("bench-lat-targets"), latencyTargetRate, latencyTargetWindow, targetValues, kgo.NoCompression())
	}}
}

func (s *latencySide) round(b *testing.B) {
	if s.only != nil {
		a := s.only(b)
		s.ackP50, s.ackP99 = append(s.ackP50, percentile(a, .5)), append(s.ackP99, percentile(a, .99))
		return
	}
	l, a := latencyViaFacade(b, s.seeds(), uniq("bench-lat-targets"), latencyTargetRate, latencyTargetWindow, targetValues, kgo.NoCompression())
	s.p50, s.p99 = append(s.p50, percentile(l, .5)), append(s.p99, percentile(l, .99))
	s.ackP50, s.ackP99 = append(s.ackP50, percentile(a, .5)), append(s.ackP99, percentile(a, .99))
}

// latencyMetric is one figure over the rounds, reported as its min,
// median and max.
type latencyMetric struct {
	name string
	xs   []float64
}

func (s *latencySide) String() string {
	if s.only != nil {
		return fmt.Sprintf("%s p50 %s p99 %s", s.name, f2(s.ackP50), f2(s.ackP99))
	}
	return fmt.Sprintf("%s: end-to-end p50 %s p99 %s; produce ack p50 %s p99 %s", s.name, f2(s.p50), f2(s.p99), f2(s.ackP50), f2(s.ackP99))
}

// BenchmarkLatencyTargets runs targetRounds rounds (QK_LATENCY_ROUNDS
// overrides), each a window of every side in a rotating order, and reports
// each side's p50 and p99 per round as min/median/max over the rounds, and
// facade ÷ kfake of the same round. The load average is logged at the
// start and the end.
func BenchmarkLatencyTargets(b *testing.B) {
	rounds := targetRounds
	if v, err := strconv.Atoi(os.Getenv("QK_LATENCY_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	for range b.N {
		b.Logf("load average at start: %s", loadAvg())
		env := map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(targetPartitions), "LOG_LEVEL": "warn"}
		fac := startFacade(b, startQueenDev(b, devOptions{}), env)
		kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(targetPartitions))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(kf.Close)
		fside := &latencySide{name: "facade", seeds: func() []string { return []string{fac.addr} }}
		kfk := &latencySide{name: "kfake", seeds: kf.ListenAddrs}
		sides := []*latencySide{fside, kfk}
		af := startFacade(b, startQueenDev(b, devOptions{fsync: "always"}), env)
		fsyncSide := &latencySide{name: "facade, queen-dev QUEEN_DEV_FSYNC=always", seeds: func() []string { return []string{af.addr} }}
		sides = append(sides, fsyncSide)
		fs := []*facade{fac, af}
		// The floors: the produce floor process (bench_produce_floor_test.go)
		// pushing each Produce as one batch to produceSink, which answers
		// every push 201 and stores nothing, and answering the Produce only
		// then; one serves a connection's requests one at a time, as the
		// facade and kfake do, the other pipelined. Any facade that
		// acknowledges or delivers a record only after Queen's answer
		// crosses at least what they cross, so their acknowledgement is a
		// lower bound for the facade's end-to-end latency. A third floor
		// pushes to a queen-dev of its own, at its default QUEEN_DEV_FSYNC,
		// as the facade's side does.
		sink := startProduceSink(b)
		_, floorAddr := startProduceFloor(b, sink.url, false)
		_, pipeAddr := startProduceFloor(b, sink.url, true)
		_, devFloorAddr := startProduceFloor(b, startQueenDev(b, devOptions{}).url, false)
		floors := []*latencySide{
			floorSide("floor, sink answering 201", "floor", floorAddr),
			floorSide("floor pipelined, sink answering 201", "floor_pipelined", pipeAddr),
			floorSide("floor pushing to queen-dev", "floor_queendev", devFloorAddr),
		}
		// The hop: what one more crossing there and back between two
		// processes costs, at its least (see hopRoundTrips).
		_, echoAddr := startChild(b, "echo", map[string]string{echoEnv: "1"}, "ECHO LISTENING ")
		hop := &latencySide{name: "hop: 1 KiB there and back to an echo process over TCP, round trip", metric: "hop", only: func(b *testing.B) []float64 {
			return hopRoundTrips(b, echoAddr, latencyTargetRate, latencyTargetWindow)
		}}
		sides = append(sides, floors...)
		sides = append(sides, hop)
		var tmpfsSide *latencySide
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			dir, err := os.MkdirTemp("/dev/shm", "qk-bench-lat-")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(dir) })
			tf := startFacade(b, startQueenDev(b, devOptions{data: dir}), env)
			fs = append(fs, tf)
			tmpfsSide = &latencySide{name: "facade, queen-dev on tmpfs", seeds: func() []string { return []string{tf.addr} }}
			sides = append(sides, tmpfsSide)
		} else {
			b.Logf("no /dev/shm: the tmpfs side is not run")
		}
		// QK_BENCH_BASELINE_BIN: another build's facade (e.g. main's)
		// in front of its own queen-dev, of QK_BENCH_BASELINE_DEV_BIN when
		// set (else this build's), as one more side: a before/after of
		// the whole path in the same rounds.
		var base *latencySide
		if bin := os.Getenv("QK_BENCH_BASELINE_BIN"); bin != "" {
			dev := startQueenDev(b, devOptions{})
			if devBin := os.Getenv("QK_BENCH_BASELINE_DEV_BIN"); devBin != "" {
				dev = newQueenDev(b.TempDir(), freePort(b), devOptions{})
				dev.Bin = devBin
				b.Cleanup(dev.kill)
				if err := dev.start(); err != nil {
					b.Fatalf("%v\n%s", err, dev.Out.From(0))
				}
			}
			bf := launchFacade(b, newFacadeOf(bin, dev.url, freePort(b), env))
			fs = append(fs, bf)
			base = &latencySide{name: "baseline " + bin + " on " + cmp.Or(os.Getenv("QK_BENCH_BASELINE_DEV_BIN"), "this queen-dev"), seeds: func() []string { return []string{bf.addr} }}
			sides = append(sides, base)
		}
		for r := range rounds {
			for i := range sides {
				sides[(r+i)%len(sides)].round(b)
			}
		}
		b.Logf("issue 24 latency at %d rec/s of 1 KiB, %d partitions, linger 0, %d rounds of %s (ms, min/median/max):", latencyTargetRate, targetPartitions, rounds, latencyTargetWindow)
		for _, s := range sides {
			b.Logf("  %s", s)
		}
		r50, r99 := ratios(fside.p50, kfk.p50), ratios(fside.p99, kfk.p99)
		b.Logf("  facade ÷ kfake, same round: p50 %s (target <= 1.2), p99 %s", f2(r50), f2(r99))
		metrics := []latencyMetric{{"facade_p50_ms", fside.p50}, {"kfake_p50_ms", kfk.p50}, {"p50_facade_over_kfake", r50}, {"facade_p99_ms", fside.p99}, {"kfake_p99_ms", kfk.p99}, {"p99_facade_over_kfake", r99}}
		b.Logf("  facade with fsync always ÷ kfake, same round: p50 %s; ÷ facade: p50 %s", f2(ratios(fsyncSide.p50, kfk.p50)), f2(ratios(fsyncSide.p50, fside.p50)))
		hr := ratios(hop.ackP50, kfk.p50)
		b.Logf("  hop round trip p50 ÷ kfake end-to-end p50, same round: %s; kfake end-to-end p50 + hop p50, ÷ kfake end-to-end p50: %s", f2(hr), f2(ratios(sum(kfk.p50, hop.ackP50), kfk.p50)))
		metrics = append(metrics, latencyMetric{"hop_p50_ms", hop.ackP50}, latencyMetric{"p50_hop_over_kfake", hr})
		for _, fl := range floors {
			fe, fa := ratios(fl.ackP50, kfk.p50), ratios(fl.ackP50, kfk.ackP50)
			b.Logf("  %s, same round: ack p50 ÷ kfake end-to-end p50 %s; ÷ kfake ack p50 %s; facade end-to-end p50 ÷ its ack p50 %s",
				fl.name, f2(fe), f2(fa), f2(ratios(fside.p50, fl.ackP50)))
			m := fl.metric
			metrics = append(metrics, latencyMetric{m + "_ack_p50_ms", fl.ackP50}, latencyMetric{"p50_" + m + "_ack_over_kfake", fe}, latencyMetric{"p50_" + m + "_ack_over_kfake_ack", fa})
		}
		if base != nil {
			b50 := ratios(base.p50, kfk.p50)
			b.Logf("  baseline ÷ kfake, same round: p50 %s, p99 %s; facade ÷ baseline: p50 %s, ack p50 %s", f2(b50), f2(ratios(base.p99, kfk.p99)),
				f2(ratios(fside.p50, base.p50)), f2(ratios(fside.ackP50, base.ackP50)))
			metrics = append(metrics, latencyMetric{"p50_baseline_over_kfake", b50}, latencyMetric{"p50_facade_over_baseline", ratios(fside.p50, base.p50)})
		}
		if tmpfsSide != nil {
			t50 := ratios(tmpfsSide.p50, kfk.p50)
			b.Logf("  facade on tmpfs ÷ kfake, same round: p50 %s; facade ÷ facade on tmpfs: p50 %s", f2(t50), f2(ratios(fside.p50, tmpfsSide.p50)))
			metrics = append(metrics, latencyMetric{"p50_tmpfs_facade_over_kfake", t50})
		}
		b.Logf("load average at end: %s", loadAvg())
		noPanics(b, fs...)
		for _, m := range metrics {
			s := spreadOf(m.xs)
			b.ReportMetric(s.min, m.name+"_min")
			b.ReportMetric(s.med, m.name+"_median")
			b.ReportMetric(s.max, m.name+"_max")
		}
	}
}

// sum is a[i] + b[i] for each i.
func sum(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}

// echoEnv runs this test binary as the echo: a process of its own that
// writes back whatever each connection sends, printing its address as
// "ECHO LISTENING <addr>".
const echoEnv = "QK_E2E_ECHO"

func init() {
	if os.Getenv(echoEnv) == "1" {
		os.Exit(runEcho())
	}
}

func runEcho() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("FATAL listen:", err)
		return 1
	}
	fmt.Println("ECHO LISTENING", ln.Addr().String())
	return acceptLoop(ln, func(c net.Conn) error {
		defer c.Close()
		_, err := io.Copy(c, c)
		return err
	})
}

// hopRoundTrips sends 1 KiB to the echo at addr and reads it back, at rate
// per second for d on one connection, and returns each round trip in ms:
// a crossing there and back between two processes over loopback TCP, each
// end woken by Go's network poller, and nothing else (no HTTP, no
// parsing). A facade adds at least one such round trip to Queen to the
// path of a record, whatever its client.
func hopRoundTrips(b *testing.B, addr string, rate int, d time.Duration) []float64 {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msg, back := bytes.Repeat([]byte("q"), 1024), make([]byte, 1024)
	total := int(float64(rate) * d.Seconds())
	rtt := make([]float64, 0, total)
	pace(rate, total, func() {
		sent := time.Now()
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, back); err != nil {
			b.Fatal(err)
		}
		rtt = append(rtt, float64(time.Since(sent).Nanoseconds())/1e6)
	})
	return rtt
}
