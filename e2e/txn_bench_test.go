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
		var txn, idem, ratio, p50, p99 []float64
		for r := 0; r < benchRounds; r++ {
			var tr, ir float64
			var commits []float64
			runTxn := func() { tr, commits = produceTxnViaFacade(b, seeds, uniq("bench-txn"), records, perTxn) }
			runIdem := func() { ir = produceViaFacade(b, seeds, uniq("bench-idem"), records) }
			if r%2 == 0 {
				runTxn()
				runIdem()
			} else {
				runIdem()
				runTxn()
			}
			txn, idem, ratio = append(txn, tr), append(idem, ir), append(ratio, tr/ir)
			p50, p99 = append(p50, percentile(commits, .5)), append(p99, percentile(commits, .99))
		}
		ts, is, rs, c50, c99 := spreadOf(txn), spreadOf(idem), spreadOf(ratio), spreadOf(p50), spreadOf(p99)
		b.Logf("produce 1 KiB acks=all lz4, %d records x %d rounds: transactional (%d per transaction) rec/s min/med/max %s, idempotent %s, ratio med %.2f (min %.2f max %.2f); commit ms p50 %.2f/%.2f/%.2f p99 %.2f/%.2f/%.2f",
			records, benchRounds, perTxn, ts, is, rs.med, rs.min, rs.max, c50.min, c50.med, c50.max, c99.min, c99.med, c99.max)
		reportSpread(b, "txn_rec/s", txn)
		reportSpread(b, "idempotent_rec/s", idem)
		reportSpread(b, "txn_over_idempotent", ratio)
		reportSpread(b, "commit_p50_ms", p50)
		reportSpread(b, "commit_p99_ms", p99)
	}
}
