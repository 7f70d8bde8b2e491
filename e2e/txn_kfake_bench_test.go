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
	refused int
	failed  int64
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
	cb := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
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
		from, stop := n, time.Now().Add(txnInterval)
		if !transactional {
			stop = end
		}
		for ; time.Now().Before(stop); n++ {
			cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(n)), Value: benchValue}, cb)
		}
		flushErr := cl.Flush(ctx)
		if !transactional {
			if flushErr != nil {
				b.Fatal(flushErr)
			}
			break
		}
		res.sizes = append(res.sizes, float64(n-from))
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
// the commits refused.
type txnSideK struct {
	name                                 string
	seeds                                []string
	idem, per100, p50at100               []float64
	idemW, interval, p50atInt, sizeAtInt []float64
	refused                              int
	failed                               int64
}

func (s *txnSideK) round(b *testing.B) {
	const records, perTxn = 10000, 100
	s.idem = append(s.idem, produceViaFacade(b, s.seeds, uniq("bk-idem-"+s.name), records))
	r, commits := produceTxnViaFacade(b, s.seeds, uniq("bk-txn-"+s.name), records, perTxn)
	s.per100, s.p50at100 = append(s.per100, r), append(s.p50at100, percentile(commits, .5))
	s.idemW = append(s.idemW, produceInterval(b, s.seeds, uniq("bk-idemw-"+s.name), false).rate)
	iv := produceInterval(b, s.seeds, uniq("bk-int-"+s.name), true)
	s.interval = append(s.interval, iv.rate)
	s.p50atInt, s.sizeAtInt = append(s.p50atInt, percentile(iv.commits, .5)), append(s.sizeAtInt, percentile(iv.sizes, .5))
	s.refused += iv.refused
	s.failed += iv.failed
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
// QK_BENCH_BASELINE_BIN (a facade binary of another commit) adds that
// build's three-node cluster on the same queen-dev as a fourth side,
// "cluster-base", so a change is measured before and after in one run.
// QK_TXN_ROUNDS overrides the rounds; run it with -v, or the summary lines
// past the tenth are cut (the metrics carry the ratios).
func BenchmarkTxnVsKfake(b *testing.B) {
	rounds := benchRounds
	if v, err := strconv.Atoi(os.Getenv("QK_TXN_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	for range b.N {
		b.Logf("load average at start: %s", loadAvg())
		env := map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(benchPartitions), "LOG_LEVEL": "warn"}
		c := newTestCluster(b, clusterOpts{nodes: 3, env: env})
		single := startFacade(b, c.dev, env)
		kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(benchPartitions))
		if err != nil {
			b.Fatal(err)
		}
		defer kf.Close()
		q, err := queen.New(queen.Config{URL: c.dev.url})
		if err != nil {
			b.Fatal(err)
		}
		sides := []*txnSideK{{name: "single", seeds: []string{single.addr}}, {name: "cluster", seeds: c.addrs()}, {name: "kfake", seeds: kf.ListenAddrs()}}
		nodes := append([]*facade{single}, c.nodes...)
		if bin := os.Getenv("QK_BENCH_BASELINE_BIN"); bin != "" {
			// Another build's cluster on the same queen-dev, in the same
			// rotation: before and after side by side.
			baseEnv := maps.Clone(env)
			baseEnv["QUEEN_KAFKA_CLUSTER"] = "queen-base" // node ids of its own
			base := newTestCluster(b, clusterOpts{nodes: 3, env: baseEnv, bin: bin, dev: c.dev})
			sides = append(sides, &txnSideK{name: "cluster-base", seeds: base.addrs()})
			nodes = append(nodes, base.nodes...)
		}
		var bare100, bareInt []float64
		for r := range rounds {
			for i := range sides {
				s := sides[(r+i)%len(sides)]
				s.round(b)
				b.Logf("round %d %s: idem %.0f, 100/txn %.0f (p50 %.2f ms), idem 2 s %.0f, 100 ms %.0f (p50 %.2f ms, %.0f records), refused %d so far; load %s",
					r+1, s.name, s.idem[r], s.per100[r], s.p50at100[r], s.idemW[r], s.interval[r], s.p50atInt[r], s.sizeAtInt[r], s.refused, loadAvg())
			}
			// The bare transaction of the same records: 100, and the
			// median an interval commit of the single facade carried.
			topic := uniq("bk-bare")
			if err := produceViaFacadeSync(single.addr, topic); err != nil {
				b.Fatal(err)
			}
			bare100 = append(bare100, percentile(bareTxn(b, q, topic, 100, 50), .5))
			if size := int(sides[0].sizeAtInt[r]); size > 0 {
				bareInt = append(bareInt, percentile(bareTxn(b, q, topic, size, 5), .5))
			}
		}
		kfk := sides[2]
		if len(sides) > 3 {
			b.Logf("cluster-base is %s", os.Getenv("QK_BENCH_BASELINE_BIN"))
		}
		k100, kInt := ratios(kfk.per100, kfk.idem), ratios(kfk.interval, kfk.idemW)
		b.Logf("1 KiB acks=all lz4, %d partitions, %d rounds; min/median/max", benchPartitions, rounds)
		b.Logf("  bare Queen transaction p50 ms: 100 records %s; interval-sized (%s records) %s", f2(bare100), f2(sides[0].sizeAtInt), f2(bareInt))
		for _, s := range sides {
			r100, rInt := ratios(s.per100, s.idem), ratios(s.interval, s.idemW)
			b.Logf("  %s: 100/txn: idem rec/s %s, txn rec/s %s, txn/idem %s (vs kfake's %.2f: %.2f), commit p50 ms %s",
				s.name, spreadOf(s.idem), spreadOf(s.per100), f2(r100), spreadOf(k100).med, spreadOf(r100).med/spreadOf(k100).med, f2(s.p50at100))
			b.Logf("  %s: 100 ms: idem rec/s %s, txn rec/s %s, txn/idem %s (vs kfake's %.2f: %.2f), commit p50 ms %s, records/commit %s, commits refused %d, records failed %d",
				s.name, spreadOf(s.idemW), spreadOf(s.interval), f2(rInt), spreadOf(kInt).med, spreadOf(rInt).med/spreadOf(kInt).med, f2(s.p50atInt), spreadOf(s.sizeAtInt), s.refused, s.failed)
			if s.name != "kfake" {
				b.Logf("  %s: commit p50 / bare Queen transaction p50: 100/txn %.2f, 100 ms %s",
					s.name, spreadOf(s.p50at100).med/spreadOf(bare100).med, bareRatio(nonzero(s.p50atInt), bareInt))
				reportSpread(b, s.name+"_commit_p50_ms_100", s.p50at100)
				b.ReportMetric(spreadOf(s.p50at100).med/spreadOf(bare100).med, s.name+"_commit_over_bare_100")
				reportSpread(b, s.name+"_txn_over_idem_100", r100)
				reportSpread(b, s.name+"_txn_over_idem_interval", rInt)
				b.ReportMetric(float64(s.refused), s.name+"_refused")
			}
		}
		reportSpread(b, "bare_p50_ms_100", bare100)
		reportSpread(b, "kfake_txn_over_idem_100", k100)
		reportSpread(b, "kfake_txn_over_idem_interval", kInt)
		noPanics(b, nodes...)
		b.Logf("load average at end: %s", loadAvg())
	}
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
