package e2e

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// produceTxnViaFacade sends n 1 KiB records as transactions of perTxn with
// the options produceViaFacade uses (acks=all, lz4, linger 2 ms, keyed over
// the topic's partitions) plus a transactional id, and returns records/s
// over the whole run and each commit's EndTxn round trip in ms (the
// records flushed before it, so the time is the commit alone).
func produceTxnViaFacade(b *testing.B, seeds []string, topic string, n, perTxn int) (float64, []float64) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(n),
		kgo.TransactionalID(uniq("tid-bench")))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(b, 2*time.Minute)
	txn := func(from, to int, failed *atomic.Int64) time.Duration {
		if err := cl.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		for i := from; i < to; i++ {
			cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: benchValue}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			b.Fatalf("commit: %v", err)
		}
		return time.Since(start)
	}
	// Warm the metadata, the producer id and the transaction path outside
	// the timed part.
	var failed atomic.Int64
	txn(0, 1, &failed)
	failed.Store(0)
	commits := make([]float64, 0, n/perTxn+1)
	start := time.Now()
	for i := 0; i < n; i += perTxn {
		commits = append(commits, float64(txn(i, min(i+perTxn, n), &failed))/float64(time.Millisecond))
	}
	el := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d transactional records failed", f)
	}
	return float64(n) / el.Seconds(), commits
}

// alternate runs first and second rounds times, the order flipping each
// round, so that both sides of a ratio see the same drift of a small noisy
// machine.
func alternate(rounds int, first, second func()) {
	for r := 0; r < rounds; r++ {
		if r%2 == 0 {
			first()
			second()
		} else {
			second()
			first()
		}
	}
}

// txnSide is one side of a transactional benchmark: each round's records/s
// and its commits' p50 and p99 in ms.
type txnSide struct{ rate, p50, p99 []float64 }

// round runs produceTxnViaFacade once through seeds and records it.
func (s *txnSide) round(b *testing.B, seeds []string, records, perTxn int) {
	r, commits := produceTxnViaFacade(b, seeds, uniq("bench-txn"), records, perTxn)
	s.rate, s.p50, s.p99 = append(s.rate, r), append(s.p50, percentile(commits, .5)), append(s.p99, percentile(commits, .99))
}

// report logs and reports the side's spreads under prefix.
func (s *txnSide) report(b *testing.B, prefix string) {
	b.Helper()
	c50, c99 := spreadOf(s.p50), spreadOf(s.p99)
	b.Logf("%s: rec/s min/med/max %s; commit ms p50 %.2f/%.2f/%.2f p99 %.2f/%.2f/%.2f", prefix, spreadOf(s.rate), c50.min, c50.med, c50.max, c99.min, c99.med, c99.max)
	reportSpread(b, prefix+"_rec/s", s.rate)
	reportSpread(b, prefix+"_commit_p50_ms", s.p50)
	reportSpread(b, prefix+"_commit_p99_ms", s.p99)
}

// BenchmarkTxnProduce: transactional produce (franz-go, 100 records per
// transaction) against idempotent produce of the same records with the
// same options and no transaction, side by side on one facade in
// alternating rounds (the order flips each round), and the commit latency
// (EndTxn round trip) p50 and p99 of each round.
func BenchmarkTxnProduce(b *testing.B) {
	const records, perTxn = 10000, 100
	for range b.N {
		dev := startQueenDev(b, devOptions{})
		fac := startFacade(b, dev, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(benchPartitions), "LOG_LEVEL": "warn"})
		seeds := []string{fac.addr}
		var txn txnSide
		var idem, ratio []float64
		alternate(benchRounds, func() { txn.round(b, seeds, records, perTxn) }, func() {
			idem = append(idem, produceViaFacade(b, seeds, uniq("bench-idem"), records))
		})
		for i := range idem {
			ratio = append(ratio, txn.rate[i]/idem[i])
		}
		rs := spreadOf(ratio)
		b.Logf("produce 1 KiB acks=all lz4, %d records x %d rounds, %d per transaction: idempotent rec/s min/med/max %s, ratio transactional/idempotent med %.2f (min %.2f max %.2f)",
			records, benchRounds, perTxn, spreadOf(idem), rs.med, rs.min, rs.max)
		txn.report(b, "txn")
		reportSpread(b, "idempotent_rec/s", idem)
		reportSpread(b, "txn_over_idempotent", ratio)
	}
}

// BenchmarkTxnProduceClusterVsSingle (issue 9): the same transactional
// workload as BenchmarkTxnProduce through a three-node cluster (every node
// in the seeds, so the coordinator and the partition leaders are spread
// over the nodes and a transaction's records are staged in Queen) and
// through one single-mode facade, both in front of one queen-dev, side by
// side in alternating rounds; the figure is cluster throughput over single.
func BenchmarkTxnProduceClusterVsSingle(b *testing.B) {
	const records, perTxn = 10000, 100
	for range b.N {
		env := map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(benchPartitions), "LOG_LEVEL": "warn"}
		c := newTestCluster(b, clusterOpts{nodes: 3, env: env})
		single := startFacade(b, c.dev, env)
		var cl, one txnSide
		alternate(benchRounds, func() { cl.round(b, c.addrs(), records, perTxn) }, func() { one.round(b, []string{single.addr}, records, perTxn) })
		var ratio []float64
		for i := range cl.rate {
			ratio = append(ratio, cl.rate[i]/one.rate[i])
		}
		rs := spreadOf(ratio)
		b.Logf("transactional produce 1 KiB acks=all lz4, %d records x %d rounds, %d per transaction: ratio cluster (3 nodes)/single min/med/max %.2f/%.2f/%.2f",
			records, benchRounds, perTxn, rs.min, rs.med, rs.max)
		cl.report(b, "cluster")
		one.report(b, "single")
		reportSpread(b, "cluster_over_single", ratio)
	}
}
