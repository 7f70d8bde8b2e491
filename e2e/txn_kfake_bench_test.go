package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
)

// txnInterval is Kafka Streams' EOS commit.interval.ms default.
const txnInterval = 100 * time.Millisecond

// txnWindow is how long an interval round produces, transactional or not;
// the client buffers at most 4,096 records, so that a transaction holds
// what the target takes in about an interval, not what the client can
// queue in one.
const txnWindow = 3 * time.Second

// intervalResult is one round of produceInterval: records/s over the
// window, each commit's EndTxn round trip in ms, the records each commit
// carried, and the commits refused (with the records that failed).
type intervalResult struct {
	rate    float64
	commits []float64
	sizes   []float64 // records of each transaction, committed or not
	// Where each cycle's time went before its EndTxn: producing for the
	// interval (longer when the client's buffer is full and it waits for
	// answers) and the flush before EndTxn, ms.
	producing, flushing []float64
	refused             int
	failed              int64
}

// produceInterval produces 1 KiB records (the options of produceViaFacade)
// as fast as the client takes them for txnWindow; with transactional set
// it commits every txnInterval (begin, produce for the interval, flush,
// commit: Kafka Streams' EOS loop), without it it is the idempotent
// producer of the same records, flushed once at the end. A refused commit
// is counted and the transaction aborted, never fatal: the figure says how
// many were refused.
func produceInterval(b *testing.B, seeds []string, topic string, transactional bool) intervalResult {
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.ProducerLinger(2 * time.Millisecond), kgo.MaxBufferedRecords(4096)}
	if transactional {
		opts = append(opts, kgo.TransactionalID(uniq("tid-interval")))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(b, 2*time.Minute)
	var failed atomic.Int64
	var firstErr atomic.Value
	cb := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
		}
	}
	// Warm the metadata, the producer id and the transaction path.
	if transactional {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: benchValue}).FirstErr(); err != nil {
		b.Fatal(err)
	}
	if transactional {
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatal(err)
		}
	}
	var res intervalResult
	n, committed := 0, 0
	start := time.Now()
	end := start.Add(txnWindow)
	for time.Now().Before(end) {
		if transactional {
			if err := cl.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
		}
		tb := time.Now()
		from, stop := n, time.Now().Add(txnInterval)
		if !transactional {
			stop = end
		}
		for ; time.Now().Before(stop); n++ {
			cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(n)), Value: benchValue}, cb)
		}
		tp := time.Now()
		flushErr := cl.Flush(ctx)
		tf := time.Now()
		if !transactional {
			if flushErr != nil {
				b.Fatal(flushErr)
			}
			break
		}
		res.sizes = append(res.sizes, float64(n-from))
		res.producing = append(res.producing, float64(tp.Sub(tb))/float64(time.Millisecond))
		res.flushing = append(res.flushing, float64(tf.Sub(tp))/float64(time.Millisecond))
		t0 := time.Now()
		how := kgo.TryCommit
		if flushErr != nil || failed.Load() > res.failed {
			how = kgo.TryAbort
		}
		err := cl.EndTransaction(ctx, how)
		if how == kgo.TryCommit && err == nil {
			res.commits = append(res.commits, float64(time.Since(t0))/float64(time.Millisecond))
			committed += n - from
			continue
		}
		res.refused++
		b.Logf("%s: a commit of %d records refused (flush: %v, commit: %v, %d records failed so far, the first: %v)", topic, n-from, flushErr, err, failed.Load(), firstErr.Load())
		res.failed = failed.Load()
		if err != nil && how == kgo.TryCommit {
			if aerr := cl.EndTransaction(ctx, kgo.TryAbort); aerr != nil {
				b.Logf("%s: commit refused (%v), then the abort too (%v): the round stops", topic, err, aerr)
				break
			}
		}
	}
	el := time.Since(start)
	if !transactional && failed.Load() > 0 {
		b.Fatalf("%d idempotent records failed", failed.Load())
	}
	res.failed = failed.Load()
	if !transactional {
		committed = n
	}
	res.rate = float64(committed) / el.Seconds()
	return res
}

// bareTxn is one side's bare Queen transactions: each
// POST /api/v1/transaction carries what a facade commit of size records
// carries (the records as envelopes with their dedup keys, and the
// qk:txn: fence put with its version expected), straight to queen-dev; it
// returns each call's latency in ms.
func bareTxn(b *testing.B, q *queen.Client, topic string, size, calls int) []float64 {
	ctx := ctxT(b, 2*time.Minute)
	now := time.Now().UnixMilli()
	tid := uniq("bare")
	pid := rand.Int64N(1 << 40) // its dedup keys are this call's own
	var version int64
	lat := make([]float64, 0, calls)
	seq := int32(0)
	for c := range calls {
		keys := producer.DedupKeys(pid, 0, seq, size)
		seq += int32(size)
		items := make([]queen.PushItem, 0, size)
		for j := range size {
			rec := envelope.Record{Key: []byte(strconv.Itoa(j)), Value: benchValue, Timestamp: now}
			items = append(items, queen.PushItem{Queue: topic, Partition: strconv.Itoa(j % benchPartitions), Payload: envelope.Append(nil, &rec), TransactionID: keys[j]})
		}
		expect := version
		fence := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TxnKey(tid), Forever: true, Expect: &expect, Required: true,
			Value: []byte(fmt.Sprintf(`{"pid":%d,"epoch":0,"state":"committed","seq":%d,"node":1,"inc":"bench","ts":%d}`, pid, c+1, now))}
		t0 := time.Now()
		res, err := q.Transaction(ctx, queen.TxnRequest{Operations: []queen.TxnOperation{{Type: "push", Items: items}}, KV: []queen.KVOp{fence}})
		if err != nil {
			b.Logf("bare transaction of %d records: %v", size, err)
			continue
		}
		lat = append(lat, float64(time.Since(t0))/float64(time.Millisecond))
		version = res[0].Version
	}
	return lat
}

// txnSideK is one target of BenchmarkTxnVsKfake, per round: idempotent and
// transactional records/s at 100 records per transaction and at a 100 ms
// commit interval, the commit p50s, the records per interval commit and
// the commits refused. A side with its queen-dev (q set: all but kfake) also has its own bare
// Queen transactions: 100 records, and the median an interval commit of it
// carried.
type txnSideK struct {
	name                                 string
	seeds                                []string
	q                                    *queen.Client // its queen-dev, for the bare transactions; nil: none
	addr                                 string        // a facade of it, to create the bare transactions' topic
	ops                                  string        // its facade's operator address, for a profile (QK_BENCH_PROFILE_DIR)
	devOps                               string        // its queen-dev's pprof address, likewise ("": not profiled)
	idem, per100, p50at100               []float64
	idemW, interval, p50atInt, sizeAtInt []float64
	bare100, bareInt                     []float64
	producingAtInt, flushingAtInt        []float64 // each round's p50 ms
	refused                              int
	failed                               int64
}

func (s *txnSideK) round(b *testing.B, w txnWorkloads) {
	const records, perTxn = 10000, 100
	if w.per100 {
		s.idem = append(s.idem, produceViaFacade(b, s.seeds, uniq("bk-idem-"+s.name), records))
		r, commits := produceTxnViaFacade(b, s.seeds, uniq("bk-txn-"+s.name), records, perTxn)
		s.per100, s.p50at100 = append(s.per100, r), append(s.p50at100, percentile(commits, .5))
	}
	if w.interval {
		s.idemW = append(s.idemW, produceInterval(b, s.seeds, uniq("bk-idemw-"+s.name), false).rate)
		var profiled []func()
		if dir := os.Getenv("QK_BENCH_PROFILE_DIR"); dir != "" {
			round := len(s.interval) + 1
			if s.ops != "" {
				profiled = append(profiled, profileFacade(b, s.ops, dir, fmt.Sprintf("txn-interval-%s-%d", s.name, round), txnWindow))
			}
			if s.devOps != "" {
				profiled = append(profiled, profileFacade(b, s.devOps, dir, fmt.Sprintf("txn-interval-%s-dev-%d", s.name, round), txnWindow))
			}
		}
		iv := produceInterval(b, s.seeds, uniq("bk-int-"+s.name), true)
		for _, done := range profiled {
			done()
		}
		s.interval = append(s.interval, iv.rate)
		s.p50atInt, s.sizeAtInt = append(s.p50atInt, percentile(iv.commits, .5)), append(s.sizeAtInt, percentile(iv.sizes, .5))
		s.producingAtInt, s.flushingAtInt = append(s.producingAtInt, percentile(iv.producing, .5)), append(s.flushingAtInt, percentile(iv.flushing, .5))
		s.refused += iv.refused
		s.failed += iv.failed
	}
}

// bare measures the side's bare Queen transactions of this round.
func (s *txnSideK) bare(b *testing.B, w txnWorkloads) {
	if s.q == nil {
		return
	}
	topic := uniq("bk-bare-" + s.name)
	if err := produceViaFacadeSync(s.addr, topic); err != nil {
		b.Fatal(err)
	}
	if w.per100 {
		s.bare100 = append(s.bare100, percentile(bareTxn(b, s.q, topic, 100, 50), .5))
	}
	if n := len(s.sizeAtInt); w.interval && n > 0 && s.sizeAtInt[n-1] > 0 {
		s.bareInt = append(s.bareInt, percentile(bareTxn(b, s.q, topic, int(s.sizeAtInt[n-1]), 5), .5))
	}
}

// txnWorkloads are the workloads a run measures (QK_TXN_WORKLOADS).
type txnWorkloads struct{ per100, interval bool }

// txnRunSides reads QK_TXN_SIDES (a comma list of single, cluster, kfake
// and baseline; default the first three) and QK_TXN_WORKLOADS (a comma
// list of 100 and interval; default both), so that a run can measure what
// a change is about alone, e.g. QK_TXN_SIDES=single,baseline,kfake
// QK_TXN_WORKLOADS=interval.
func txnRunSides(b *testing.B) (map[string]bool, txnWorkloads) {
	sides := map[string]bool{}
	list := os.Getenv("QK_TXN_SIDES")
	if list == "" {
		list = "single,cluster,kfake"
	}
	for _, n := range strings.Split(list, ",") {
		switch n = strings.TrimSpace(n); n {
		case "single", "cluster", "kfake", "baseline", "cluster-base":
			sides[n] = true
		default:
			b.Fatalf("QK_TXN_SIDES: unknown side %q (single, cluster, kfake, baseline, cluster-base)", n)
		}
	}
	var w txnWorkloads
	list = os.Getenv("QK_TXN_WORKLOADS")
	if list == "" {
		list = "100,interval"
	}
	for _, n := range strings.Split(list, ",") {
		switch strings.TrimSpace(n) {
		case "100":
			w.per100 = true
		case "interval":
			w.interval = true
		default:
			b.Fatalf("QK_TXN_WORKLOADS: unknown workload %q (100, interval)", n)
		}
	}
	return sides, w
}

func ratios(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] / b[i]
	}
	return out
}

func f2(xs []float64) string {
	if len(xs) == 0 {
		return "n/a"
	}
	s := spreadOf(xs)
	return fmt.Sprintf("%.2f/%.2f/%.2f", s.min, s.med, s.max)
}

// med is xs's median, 0 when empty.
func med(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return spreadOf(xs).med
}

// loadAvg is /proc/loadavg's three load averages, "?" where unreadable.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// BenchmarkTxnVsKfake (issue 23, item 4): the same franz-go producer
// through a single-mode facade, a three-node cluster (every node in the
// seeds) and franz-go's in-memory kfake, in one run with the order of the
// targets rotating each round: transactional ÷ idempotent records/s at 100
// records per transaction and at a 100 ms commit interval (with the
// commits refused), each commit's p50, and beside it the bare Queen
// transaction of the same records (POST /api/v1/transaction straight to
// queen-dev, the fence included). Every figure is min/median/max over
// benchRounds rounds; the load average is logged at the start and the end.
// QK_TXN_ROUNDS overrides the rounds; QK_TXN_SIDES and QK_TXN_WORKLOADS
// choose what runs (txnRunSides); the side "baseline" is a single-mode
// facade of QK_BENCH_BASELINE_BIN (default this build) in front of its own
// queen-dev of QK_BENCH_BASELINE_DEV_BIN (default this build), for a
// before/after in one run; the side "cluster-base" is a three-node
// cluster of QK_BENCH_BASELINE_BIN on the cluster side's queen-dev. Run it with -v, or the summary lines past the
// tenth are cut (the metrics carry the ratios).
func BenchmarkTxnVsKfake(b *testing.B) {
	rounds := benchRounds
	if v, err := strconv.Atoi(os.Getenv("QK_TXN_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	want, w := txnRunSides(b)
	for range b.N {
		b.Logf("load average at start: %s", loadAvg())
		env := map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(benchPartitions), "LOG_LEVEL": "warn"}
		var sides []*txnSideK
		var kfk *txnSideK
		var facades []*facade
		var c *testCluster
		var dev *queenDev
		if want["cluster"] {
			c = newTestCluster(b, clusterOpts{nodes: 3, env: env})
			dev, facades = c.dev, append(facades, c.nodes...)
		}
		if want["single"] {
			profiling := os.Getenv("QK_BENCH_PROFILE_DIR") != ""
			devPprof := ""
			if dev == nil {
				if profiling {
					devPprof = "127.0.0.1:" + strconv.Itoa(freePort(b))
				}
				dev = startQueenDev(b, devOptions{faults: true, pprof: devPprof})
			}
			senv, ops := maps.Clone(env), ""
			if profiling {
				ops = "127.0.0.1:" + strconv.Itoa(freePort(b))
				senv["QUEEN_KAFKA_HTTP_ADDR"] = ops
			}
			single := startFacade(b, dev, senv)
			facades = append(facades, single)
			sides = append(sides, &txnSideK{name: "single", seeds: []string{single.addr}, q: queenClient(b, dev.url), addr: single.addr, ops: ops, devOps: devPprof})
		}
		if c != nil {
			// Its own bare transactions, of its own interval commits' size.
			sides = append(sides, &txnSideK{name: "cluster", seeds: c.addrs(), q: queenClient(b, c.dev.url), addr: c.nodes[0].addr})
		}
		if want["cluster-base"] {
			bin := os.Getenv("QK_BENCH_BASELINE_BIN")
			if c == nil || bin == "" {
				b.Fatal("the cluster-base side needs the cluster side and QK_BENCH_BASELINE_BIN")
			}
			// Another build's cluster on the same queen-dev, in the same
			// rotation: before and after side by side.
			baseEnv := maps.Clone(env)
			baseEnv["QUEEN_KAFKA_CLUSTER"] = "queen-base" // node ids of its own
			base := newTestCluster(b, clusterOpts{nodes: 3, env: baseEnv, bin: bin, dev: c.dev})
			sides = append(sides, &txnSideK{name: "cluster-base", seeds: base.addrs(), q: queenClient(b, c.dev.url), addr: base.nodes[0].addr})
			facades = append(facades, base.nodes...)
			b.Logf("cluster-base: facade %s", bin)
		}
		if want["baseline"] {
			old := newQueenDev(b.TempDir(), freePort(b), devOptions{faults: true})
			if bin := os.Getenv("QK_BENCH_BASELINE_DEV_BIN"); bin != "" {
				old.Bin = bin
			}
			b.Cleanup(old.kill)
			if err := old.start(); err != nil {
				b.Fatalf("%v\n%s", err, old.Out.From(0))
			}
			bin := os.Getenv("QK_BENCH_BASELINE_BIN")
			if bin == "" {
				bin = queenKafkBin
			}
			base := launchFacade(b, newFacadeOf(bin, old.url, freePort(b), env))
			facades = append(facades, base)
			sides = append(sides, &txnSideK{name: "baseline", seeds: []string{base.addr}, q: queenClient(b, old.url), addr: base.addr})
			b.Logf("baseline: facade %s, queen-dev %s", bin, old.Bin)
		}
		if want["kfake"] {
			kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(benchPartitions))
			if err != nil {
				b.Fatal(err)
			}
			defer kf.Close()
			kfk = &txnSideK{name: "kfake", seeds: kf.ListenAddrs()}
			sides = append(sides, kfk)
		}
		for r := range rounds {
			for i := range sides {
				s := sides[(r+i)%len(sides)]
				s.round(b, w)
				b.Logf("round %d %s: idem %.0f, 100/txn %.0f (p50 %.2f ms), idem 2 s %.0f, 100 ms %.0f (p50 %.2f ms, %.0f records), refused %d so far; load %s",
					r+1, s.name, last(s.idem), last(s.per100), last(s.p50at100), last(s.idemW), last(s.interval), last(s.p50atInt), last(s.sizeAtInt), s.refused, loadAvg())
			}
			// The bare transaction of the same records: 100, and the
			// median an interval commit of the side carried.
			for _, s := range sides {
				s.bare(b, w)
			}
		}
		var k100, kInt []float64
		if kfk != nil {
			k100, kInt = ratios(kfk.per100, kfk.idem), ratios(kfk.interval, kfk.idemW)
		}
		b.Logf("1 KiB acks=all lz4, %d partitions, %d rounds; min/median/max", benchPartitions, rounds)
		var single *txnSideK
		for _, s := range sides {
			if s.name == "single" {
				single = s
			}
			if s.q != nil {
				b.Logf("  %s: bare Queen transaction p50 ms: 100 records %s; interval-sized (%s records) %s", s.name, f2(s.bare100), f2(s.sizeAtInt), f2(s.bareInt))
			}
		}
		for _, s := range sides {
			// The cluster's bare transactions are the single side's (one
			// queen-dev).
			bare100, bareInt := s.bare100, s.bareInt
			if s.q == nil && single != nil {
				bare100, bareInt = single.bare100, single.bareInt
			}
			r100, rInt := ratios(s.per100, s.idem), ratios(s.interval, s.idemW)
			if w.per100 {
				b.Logf("  %s: 100/txn: idem rec/s %s, txn rec/s %s, txn/idem %s (vs kfake's %.2f: %.2f), commit p50 ms %s",
					s.name, spreadOf(s.idem), spreadOf(s.per100), f2(r100), med(k100), med(r100)/med(k100), f2(s.p50at100))
			}
			if w.interval {
				b.Logf("  %s: 100 ms: idem rec/s %s, txn rec/s %s, txn/idem %s (vs kfake's %.2f: %.2f), commit p50 ms %s, records/commit %s, commits refused %d, records failed %d",
					s.name, spreadOf(s.idemW), spreadOf(s.interval), f2(rInt), med(kInt), med(rInt)/med(kInt), f2(s.p50atInt), spreadOf(s.sizeAtInt), s.refused, s.failed)
				b.Logf("  %s: 100 ms: a cycle's p50 ms: producing %s, flush %s, EndTxn %s", s.name, f2(s.producingAtInt), f2(s.flushingAtInt), f2(s.p50atInt))
			}
			if s.name != "kfake" {
				b.Logf("  %s: commit p50 / bare Queen transaction p50: 100/txn %s, 100 ms %s",
					s.name, bareRatio(s.p50at100, bare100), bareRatio(nonzero(s.p50atInt), bareInt))
				if w.per100 {
					reportSpread(b, s.name+"_commit_p50_ms_100", s.p50at100)
					if len(bare100) > 0 {
						b.ReportMetric(med(s.p50at100)/med(bare100), s.name+"_commit_over_bare_100")
					}
					reportSpread(b, s.name+"_txn_over_idem_100", r100)
				}
				if w.interval {
					reportSpread(b, s.name+"_txn_over_idem_interval", rInt)
				}
				b.ReportMetric(float64(s.refused), s.name+"_refused")
			}
			if s.q != nil && w.per100 {
				reportSpread(b, s.name+"_bare_p50_ms_100", s.bare100)
			}
		}
		if w.per100 && len(k100) > 0 {
			reportSpread(b, "kfake_txn_over_idem_100", k100)
		}
		if w.interval && len(kInt) > 0 {
			reportSpread(b, "kfake_txn_over_idem_interval", kInt)
		}
		noPanics(b, facades...)
		b.Logf("load average at end: %s", loadAvg())
	}
}

// last is xs's last element, 0 when empty.
func last(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)-1]
}

// queenClient is a Queen client on url.
func queenClient(b *testing.B, url string) *queen.Client {
	q, err := queen.New(queen.Config{URL: url})
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// nonzero is xs without its zeros (a round whose every commit was
// refused has no commit p50).
func nonzero(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if x != 0 {
			out = append(out, x)
		}
	}
	return out
}

func bareRatio(p50s, bare []float64) string {
	if len(bare) == 0 || len(p50s) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", spreadOf(p50s).med/spreadOf(bare).med)
}

// produceViaFacadeSync creates topic through the facade at addr (its
// partitions are the facade's default) with one record, so the bare
// transactions push to a queue that exists.
func produceViaFacadeSync(addr, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: benchValue}).FirstErr(); err != nil {
		return errors.Join(errors.New("creating the bare transactions' topic"), err)
	}
	return nil
}
