package e2e

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// The group benchmarks of issue 4, with real clients against real
// processes: how long ten franz-go members take to form a Stable group,
// and OffsetCommit latency through the facade against the same KV writes
// made directly.

// BenchmarkGroupTenMembersToStable: seconds from ten members starting
// (join delay 0) until every partition is assigned to one of them.
func BenchmarkGroupTenMembersToStable(b *testing.B) {
	dev := startQueenDev(b, devOptions{})
	fac := startFacade(b, dev, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "20", "LOG_LEVEL": "warn"})
	topic := uniq("bench-members")
	if _, err := newAdmin(b, []string{fac.addr}).CreateTopic(ctxT(b, 10*time.Second), 20, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	var secs []float64
	for r := 0; r < benchRounds*b.N; r++ {
		group := uniq("bench-group")
		// Stable means every member holds a share and the shares are
		// disjoint and cover the topic: one generation of all ten, not the
		// first member's solo generation that join delay 0 forms at once.
		var mu sync.Mutex
		held := make([]map[int32]bool, 10)
		done := make(chan struct{})
		var once sync.Once
		check := func() {
			total, cover := 0, map[int32]bool{}
			for _, h := range held {
				if len(h) == 0 {
					return
				}
				total += len(h)
				for p := range h {
					cover[p] = true
				}
			}
			if total == 20 && len(cover) == 20 {
				once.Do(func() { close(done) })
			}
		}
		start := time.Now()
		for m := 0; m < 10; m++ {
			held[m] = map[int32]bool{}
			drop := func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range a[topic] {
					delete(held[m], p)
				}
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(fac.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
				kgo.OnPartitionsRevoked(drop), kgo.OnPartitionsLost(drop),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
					mu.Lock()
					defer mu.Unlock()
					for _, p := range a[topic] {
						held[m][p] = true
					}
					check()
				}))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			go cl.PollFetches(ctxT(b, 30*time.Second))
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Fatal("ten members did not cover the topic within 30 s")
		}
		secs = append(secs, time.Since(start).Seconds())
	}
	s := spreadOf(secs)
	b.Logf("ten members to a covering assignment (s, min/med/max): %.3f/%.3f/%.3f", s.min, s.med, s.max)
	b.ReportMetric(s.med, "stable-s-median")
}

// BenchmarkOffsetCommitFacadeVsDirect: sequential OffsetCommit requests of
// one partition through the facade (a kmsg request over a kgo client) and
// the same KV put made directly, alternating rounds; p50/p99 of each.
func BenchmarkOffsetCommitFacadeVsDirect(b *testing.B) {
	const commits = 500
	dev := startQueenDev(b, devOptions{})
	fac := startFacade(b, dev, map[string]string{"LOG_LEVEL": "warn"})
	cl := newKgo(b, []string{fac.addr})
	q, err := queen.New(queen.Config{URL: dev.url})
	if err != nil {
		b.Fatal(err)
	}
	ctx := ctxT(b, 5*time.Minute)
	topic := uniq("bench-commit")
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	// The one facade coordinates every group. A raw by-name commit (capped at
	// v9) goes straight to its broker: kgo's own routing of group requests
	// knows only *kmsg.OffsetCommitRequest and refuses the wrapper ("client is
	// too old").
	brokers := cl.DiscoveredBrokers()
	if len(brokers) != 1 {
		b.Fatalf("want the one facade as the only broker, got %d", len(brokers))
	}
	coord := brokers[0]
	var fp50, fp99, dp50, dp99, rate []float64
	for r := 0; r < benchRounds*b.N; r++ {
		group := uniq("bench-commit-group")
		fl := make([]float64, 0, commits)
		fstart := time.Now()
		for i := 0; i < commits; i++ {
			req := commitReq(group, topic, 0, int64(i))
			t0 := time.Now()
			raw, err := coord.Request(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			resp := raw.(*kmsg.OffsetCommitResponse)
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
				b.Fatalf("commit answered error %d", code)
			}
			fl = append(fl, float64(time.Since(t0).Microseconds())/1000)
		}
		felapsed := time.Since(fstart)
		dl := make([]float64, 0, commits)
		key := queen.GroupOffsetKey(group+"-direct", topic, 0)
		dstart := time.Now()
		for i := 0; i < commits; i++ {
			v, _ := json.Marshal(map[string]any{"offset": i, "metadata": "", "ts": time.Now().UnixMilli()})
			t0 := time.Now()
			if _, err := q.KV(ctx, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: v, Forever: true}}); err != nil {
				b.Fatal(err)
			}
			dl = append(dl, float64(time.Since(t0).Microseconds())/1000)
		}
		delapsed := time.Since(dstart)
		fp50, fp99 = append(fp50, percentile(fl, .5)), append(fp99, percentile(fl, .99))
		dp50, dp99 = append(dp50, percentile(dl, .5)), append(dp99, percentile(dl, .99))
		rate = append(rate, delapsed.Seconds()/felapsed.Seconds())
	}
	f50, f99, d50, d99, rr := spreadOf(fp50), spreadOf(fp99), spreadOf(dp50), spreadOf(dp99), spreadOf(rate)
	b.Logf("OffsetCommit, %d sequential commits x %d rounds (ms, min/med/max): facade p50 %.2f/%.2f/%.2f p99 %.2f/%.2f/%.2f; direct KV p50 %.2f/%.2f/%.2f p99 %.2f/%.2f/%.2f; throughput ratio facade/direct med %.2f (min %.2f max %.2f)",
		commits, benchRounds, f50.min, f50.med, f50.max, f99.min, f99.med, f99.max, d50.min, d50.med, d50.max, d99.min, d99.med, d99.max, rr.med, rr.min, rr.max)
	b.ReportMetric(f99.med, "facade-p99-ms")
	b.ReportMetric(d99.med, "direct-p99-ms")
	b.ReportMetric(rr.med, "throughput-ratio")
}
