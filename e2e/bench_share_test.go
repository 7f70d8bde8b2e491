package e2e

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkShareVsGroup (issue 22): one franz-go share consumer (KIP-932,
// every record ACCEPTed, the acks riding on its next ShareFetch and flushed
// at the end) against one franz-go consumer of a classic consumer group
// (committing at its defaults and once at the end), each reading the same
// topic from the start under a fresh group, alternating which goes first
// each round, through one facade. Reported: records/s of each
// (min/median/max over the rounds), the ratio share/classic of each round,
// and the Queen KV writes per 1,000 records each made (put, delete,
// putIfAbsent and incr operations of POST /api/v1/kv, counted by a proxy
// between the facade and queen-dev: the share consumer's are its fenced
// share-partition writes, one per ShareFetch and partition carrying that
// fetch's acknowledgements too; the classic consumer's its commits). The
// load average is printed at start and end.
func BenchmarkShareVsGroup(b *testing.B) {
	const (
		records = benchRecords
		parts   = 4
	)
	dev := startQueenDev(b, devOptions{})
	px := startQueenProxy(b, dev.url)
	env := maps.Clone(shareGroupEnv)
	env["LOG_LEVEL"] = "warn"
	fac := launchFacade(b, newFacade(px.url, freePort(b), env))
	seeds := []string{fac.addr}
	topic := uniq("bench-share")
	if _, err := newAdmin(b, seeds).CreateTopic(ctxT(b, 10*time.Second), parts, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	prod := newKgo(b, seeds, kgo.ProducerLinger(5*time.Millisecond))
	value := benchValue[:100]
	for i := 0; i < records; i++ {
		prod.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Errorf("produce: %v", err)
			}
		})
	}
	if err := prod.Flush(ctxT(b, 2*time.Minute)); err != nil {
		b.Fatal(err)
	}
	admin := newKgo(b, seeds)
	b.Logf("%d records of %d B over %d partitions; load average at start: %s", records, len(value), parts, loadAvg())

	type side struct {
		rate, writes []float64
	}
	var share, classic side
	var ratio []float64
	for r := 0; r < benchRounds*b.N; r++ {
		runs := []func(){
			func() {
				group := uniq("bench-share-group")
				setGroupConfigs(b, admin, group, "share.auto.offset.reset", "earliest")
				w0 := px.kvWrites.Load()
				secs := benchShareRead(b, seeds, topic, group, records)
				share.rate = append(share.rate, records/secs)
				share.writes = append(share.writes, float64(px.kvWrites.Load()-w0)*1000/records)
			},
			func() {
				w0 := px.kvWrites.Load()
				secs := benchClassicRead(b, seeds, topic, uniq("bench-classic-group"), records)
				classic.rate = append(classic.rate, records/secs)
				classic.writes = append(classic.writes, float64(px.kvWrites.Load()-w0)*1000/records)
			},
		}
		if r%2 == 1 {
			runs[0], runs[1] = runs[1], runs[0]
		}
		for _, run := range runs {
			run()
		}
		ratio = append(ratio, share.rate[r]/classic.rate[r])
		b.Logf("round %d: share %.0f records/s (%.1f KV writes per 1,000 records), classic %.0f records/s (%.1f KV writes per 1,000 records), ratio %.3f; load %s",
			r+1, share.rate[r], share.writes[r], classic.rate[r], classic.writes[r], ratio[r], loadAvg())
	}
	sr, cr, rr, sw, cw := spreadOf(share.rate), spreadOf(classic.rate), spreadOf(ratio), spreadOf(share.writes), spreadOf(classic.writes)
	b.Logf("records/s (min/med/max): share %.0f/%.0f/%.0f, classic %.0f/%.0f/%.0f; ratio share/classic %.3f/%.3f/%.3f; KV writes per 1,000 records: share %.1f/%.1f/%.1f, classic %.1f/%.1f/%.1f; load average at end: %s",
		sr.min, sr.med, sr.max, cr.min, cr.med, cr.max, rr.min, rr.med, rr.max, sw.min, sw.med, sw.max, cw.min, cw.med, cw.max, loadAvg())
	b.ReportMetric(sr.med, "share-rec/s")
	b.ReportMetric(cr.med, "classic-rec/s")
	b.ReportMetric(rr.med, "share/classic")
	b.ReportMetric(sw.med, "share-kv-writes/1k-rec")
	b.ReportMetric(cw.med, "classic-kv-writes/1k-rec")
}

// benchShareRead reads n records of topic with one share consumer of group,
// ACCEPTing each, and returns the seconds from its start to its last ack
// answered.
func benchShareRead(b *testing.B, seeds []string, topic, group string, n int) float64 {
	b.Helper()
	start := time.Now()
	cl := newKgo(b, seeds, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	defer cl.Close()
	ctx := ctxT(b, 3*time.Minute)
	seen := map[[2]int64]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("share consumer read %d of %d records", len(seen), n)
		}
		fs.EachError(func(t string, p int32, err error) { b.Errorf("share fetch %s[%d]: %v", t, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			seen[[2]int64{int64(r.Partition), r.Offset}] = true
			r.Ack(kgo.AckAccept)
		})
	}
	if err := cl.FlushAcks(ctx); err != nil {
		b.Fatal(err)
	}
	return time.Since(start).Seconds()
}

// benchClassicRead reads n records of topic with one consumer of a classic
// group from the start, commits, and returns the seconds it took.
func benchClassicRead(b *testing.B, seeds []string, topic, group string, n int) float64 {
	b.Helper()
	start := time.Now()
	cl := newKgo(b, seeds, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx := ctxT(b, 3*time.Minute)
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("classic consumer read %d of %d records", got, n)
		}
		fs.EachError(func(t string, p int32, err error) { b.Errorf("fetch %s[%d]: %v", t, p, err) })
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		b.Fatal(fmt.Errorf("commit: %w", err))
	}
	return time.Since(start).Seconds()
}
