package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

// wideParts is the width of the wide-consumer test and benchmark: issue
// 10's 10,000 partitions.
const wideParts = 10_000

// fetchBytes records the size of every Fetch request written and response
// read by one client (a kgo hook). The consumer has one broker and one
// fetch in flight, so the i-th request is answered by the i-th response.
type fetchBytes struct {
	mu        sync.Mutex
	req, resp []int
}

func (h *fetchBytes) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == kmsg.Fetch.Int16() && err == nil {
		h.mu.Lock()
		h.req = append(h.req, n)
		h.mu.Unlock()
	}
}

func (h *fetchBytes) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == kmsg.Fetch.Int16() && err == nil {
		h.mu.Lock()
		h.resp = append(h.resp, n)
		h.mu.Unlock()
	}
}

// sizes are the request and response sizes recorded so far.
func (h *fetchBytes) sizes() (req, resp []int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.req), slices.Clone(h.resp)
}

// wideRun is one consumer's run over a trickle.
type wideRun struct {
	req, resp []int     // bytes of each fetch after the first
	fetches   int       // fetches during the trickle
	took      float64   // seconds of the trickle
	lat       []float64 // produce-to-delivery, ms
	cpu       float64   // facade CPU-seconds during the trickle
}

// createWide creates a topic of wideParts partitions.
func createWide(tb testing.TB, seeds []string) string {
	tb.Helper()
	topic := uniq("wide")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctxT(tb, time.Minute), wideParts, 1, nil, topic); err != nil {
		tb.Fatal(err)
	}
	return topic
}

// pushTrickle pushes total records straight to Queen at rate per second,
// each to a random partition, its key the send time in ns; the same
// trickle whoever consumes it.
func pushTrickle(ctx context.Context, q *queen.Client, topic string, rate, total int) {
	pace(rate, total, func() {
		rec := envelope.Record{Key: []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), Value: []byte("trickle"), Timestamp: -1}
		p := strconv.Itoa(rand.IntN(wideParts))
		go q.Push(ctx, []queen.PushItem{{Queue: topic, Partition: p, Payload: envelope.Append(nil, &rec)}})
	})
}

// wideBroker is what a wide consumer runs against: its seed, how a trickle
// reaches it, and the CPU-seconds its broker process has used (nil when it
// runs in this process).
type wideBroker struct {
	seed  string
	topic string
	push  func(ctx context.Context, rate, total int)
	cpu   func() float64
	// around, when set, is called as the trickle starts, and what it
	// returns when the trickle is consumed (a profile of the trickle).
	around func() (end func())
}

// facadeWide is the facade fac in front of Queen q, the trickle pushed
// natively to Queen.
func facadeWide(fac *facade, q *queen.Client, topic string) wideBroker {
	return wideBroker{seed: fac.addr, topic: topic,
		push: func(ctx context.Context, rate, total int) { pushTrickle(ctx, q, topic, rate, total) },
		cpu:  func() float64 { return cpuSeconds(fac.pid()) }}
}

// kfakeWide is franz-go's in-memory Kafka (kfake, fetch sessions
// included) with a topic of wideParts partitions, the trickle produced by
// a franz-go producer in this process: the same consumer against a broker
// that answers from memory, for what the consumer itself costs.
func kfakeWide(tb testing.TB) wideBroker {
	tb.Helper()
	topic := uniq("wide")
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(wideParts, topic))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(kf.Close)
	seed := kf.ListenAddrs()[0]
	prod, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(prod.Close)
	return wideBroker{seed: seed, topic: topic, push: func(ctx context.Context, rate, total int) {
		pace(rate, total, func() {
			r := &kgo.Record{Topic: topic, Partition: rand.Int32N(wideParts), Key: []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), Value: []byte("trickle")}
			prod.Produce(ctx, r, nil)
		})
	}}
}

// consumeWide runs a franz-go consumer of every partition of the broker's
// topic (sessions unless sessionless) through one trickle of total records
// at rate, and returns what its fetches cost. before, when not nil, runs
// after the trickle and before the consumer closes (which ends its
// session).
func consumeWide(tb testing.TB, br wideBroker, sessionless bool, rate, total int, before func()) wideRun {
	tb.Helper()
	topic := br.topic
	cpuNow := func() float64 {
		if br.cpu == nil {
			return 0
		}
		return br.cpu()
	}
	ctx := ctxT(tb, 2*time.Minute)
	offsets := make(map[int32]kgo.Offset, wideParts)
	for p := int32(0); p < wideParts; p++ {
		offsets[p] = kgo.NewOffset().AtEnd()
	}
	hook := &fetchBytes{}
	opts := []kgo.Opt{kgo.SeedBrokers(br.seed), kgo.WithHooks(hook), kgo.FetchMaxWait(5 * time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets})}
	if sessionless {
		opts = append(opts, kgo.DisableFetchSessions())
	}
	cons, err := kgo.NewClient(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	defer cons.Close()
	// Warm: the consumer has listed the ends and had two fetches answered
	// (with sessions: the full one and the first incremental one) before
	// the trickle starts.
	for {
		if _, resp := hook.sizes(); len(resp) >= 2 {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := cons.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			tb.Fatal("the consumer never fetched")
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if pctx.Err() == nil {
				tb.Fatalf("warm fetch: %v", err)
			}
		})
	}
	req0, resp0 := hook.sizes()
	if br.around != nil {
		defer br.around()()
	}
	c0 := cpuNow()
	start := time.Now()
	lat := make([]float64, 0, total)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(lat) < total && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := time.Now().UnixNano()
			fs.EachRecord(func(r *kgo.Record) {
				if sent, err := strconv.ParseInt(string(r.Key), 10, 64); err == nil {
					lat = append(lat, float64(now-sent)/1e6)
				}
			})
		}
	}()
	br.push(ctx, rate, total)
	<-done
	took := time.Since(start).Seconds()
	cpu := cpuNow() - c0
	if before != nil {
		before()
	}
	req, resp := hook.sizes()
	n := min(len(req), len(resp))
	if len(req0) == 0 || len(resp0) == 0 || n <= len(req0) {
		tb.Fatalf("no fetch recorded during the trickle: %d before, %d after", len(req0), n)
	}
	if len(lat) < total {
		tb.Fatalf("%d of %d records consumed", len(lat), total)
	}
	return wideRun{
		req:     req[1:n],
		resp:    resp[1:n],
		fetches: n - len(req0),
		took:    took,
		lat:     lat,
		cpu:     cpu,
	}
}

func medianInt(xs []int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

// TestFetchSessionWideConsumer: a franz-go consumer of 10,000 partitions
// with a trickle of records. Without sessions every fetch carries all
// 10,000 partitions both ways (some 330 KB asked, 370 KB answered). With
// sessions the node holds one session of all 10,000 and a fetch carries
// only what moved: the median request and the median response are under
// 1% of the sessionless ones. (franz-go adds partitions to its session as
// their start offsets are listed, so its first fetch is not the widest.)
// Bytes only, no times.
func TestFetchSessionWideConsumer(t *testing.T) {
	t.Parallel()
	dev := startQueenDev(t, devOptions{})
	ops := "127.0.0.1:" + strconv.Itoa(freePort(t))
	fac := startFacade(t, dev, map[string]string{"LOG_LEVEL": "warn", "QUEEN_KAFKA_HTTP_ADDR": ops})
	q, err := queen.New(queen.Config{URL: dev.url})
	if err != nil {
		t.Fatal(err)
	}
	topic := createWide(t, []string{fac.addr})
	const rate, total = 20, 40

	br := facadeWide(fac, q, topic)
	with := consumeWide(t, br, false, rate, total, func() {
		if st := sessionsAt(t, ops); st.partitions != wideParts || st.sessions != 1 {
			t.Errorf("the node holds %v sessions of %v partitions, want 1 of %d", st.sessions, st.partitions, wideParts)
		}
	})
	eventually(t, 10*time.Second, "the closed consumer's session is closed (epoch -1)", func() (bool, string) {
		st := sessionsAt(t, ops)
		return st.sessions == 0, fmt.Sprintf("%v sessions", st.sessions)
	})
	without := consumeWide(t, br, true, rate, total, nil)
	t.Logf("sessions: median request %.0f B, response %.0f B over %d fetches; sessionless: median request %.0f B, response %.0f B over %d fetches",
		medianInt(with.req), medianInt(with.resp), with.fetches, medianInt(without.req), medianInt(without.resp), without.fetches)

	if m := medianInt(without.req); m < wideParts*20 {
		t.Errorf("median sessionless request %.0f B: it should carry all 10,000 partitions", m)
	}
	if m := medianInt(without.resp); m < wideParts*20 {
		t.Errorf("median sessionless response %.0f B: it should carry all 10,000 partitions", m)
	}
	if r := medianInt(with.req) / medianInt(without.req); r > 0.01 {
		t.Errorf("sessions' median request is %.2f%% of the sessionless one, want <= 1%%", r*100)
	}
	if r := medianInt(with.resp) / medianInt(without.resp); r > 0.01 {
		t.Errorf("sessions' median response is %.2f%% of the sessionless one, want <= 1%%", r*100)
	}
}

// longPollWide is a native Queen consumer of the same partitions: one long
// poll per chunk of queen.MaxFetchEntries partitions, each from the end,
// through one trickle; it returns produce-to-delivery latencies in ms.
func longPollWide(tb testing.TB, q *queen.Client, topic string, rate, total int) []float64 {
	tb.Helper()
	ctx, cancel := context.WithCancel(ctxT(tb, 2*time.Minute))
	defer cancel()
	var (
		mu  sync.Mutex
		lat = make([]float64, 0, total)
		wg  sync.WaitGroup
	)
	enough := make(chan struct{})
	for from := 0; from < wideParts; from += queen.MaxFetchEntries {
		entries := make([]queen.FetchEntry, 0, queen.MaxFetchEntries)
		for p := from; p < min(from+queen.MaxFetchEntries, wideParts); p++ {
			entries = append(entries, queen.FetchEntry{Queue: topic, Partition: strconv.Itoa(p), MaxBytes: 1 << 20})
		}
		// From the end: the high watermarks, without waiting.
		res, err := q.Fetch(ctx, queen.FetchRequest{Entries: entries})
		if err != nil {
			tb.Fatal(err)
		}
		for i := range res {
			entries[i].Offset = res[i].HighWatermark
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := q.Fetch(ctx, queen.FetchRequest{Entries: entries, MaxWaitMs: 5000, MinBytes: 1})
				if err != nil {
					continue
				}
				now := time.Now().UnixNano()
				mu.Lock()
				for i := range res {
					for _, r := range res[i].Records {
						rec := envelope.DecodePayload(r.Payload, time.Time{})
						if sent, err := strconv.ParseInt(string(rec.Key), 10, 64); err == nil {
							lat = append(lat, float64(now-sent)/1e6)
						}
						entries[i].Offset = r.Offset + 1
					}
				}
				if len(lat) >= total {
					select {
					case <-enough:
					default:
						close(enough)
					}
				}
				mu.Unlock()
			}
		}()
	}
	pushTrickle(ctx, q, topic, rate, total)
	select {
	case <-enough:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	if len(lat) < total {
		tb.Fatalf("native long poll: %d of %d records", len(lat), total)
	}
	return lat
}

// BenchmarkFetchSessionsWide: issue 10's benchmark. A franz-go consumer of
// 10,000 partitions under a 200 records/s trickle, with fetch sessions and
// without (kgo.DisableFetchSessions), side by side in one run and
// alternating, against a native Queen long poll of the same partitions
// (one long poll per 1,024), and the same consumer against franz-go's
// in-memory kfake (sessions included), which shows what the consumer of
// 10,000 partitions costs whatever the broker. Per round: Fetch request and
// response bytes (median per fetch), fetches/s, produce-to-delivery
// p50/p99, and the facade's CPU per fetch; reported as min/median/max over
// the rounds, with sessions ÷ sessionless, sessions ÷ native and sessions ÷
// kfake. QK_WIDE_ROUNDS overrides the 3 rounds; QK_BENCH_PROFILE_DIR
// writes a CPU and an allocation profile of the facade over each round's
// sessions side's trickle (cpu-wide-<round>.pprof), which costs it some
// CPU.
func BenchmarkFetchSessionsWide(b *testing.B) {
	const rate, dur = 200, 5 * time.Second
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("QK_WIDE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	total := int(rate * dur.Seconds())
	profiles := os.Getenv("QK_BENCH_PROFILE_DIR")
	for range b.N {
		dev := startQueenDev(b, devOptions{})
		env := map[string]string{"LOG_LEVEL": "warn"}
		opsAddr := "127.0.0.1:" + strconv.Itoa(freePort(b))
		if profiles != "" {
			env["QUEEN_KAFKA_HTTP_ADDR"] = opsAddr
		}
		fac := startFacade(b, dev, env)
		q, err := queen.New(queen.Config{URL: dev.url})
		if err != nil {
			b.Fatal(err)
		}
		topic := createWide(b, []string{fac.addr})
		br := facadeWide(fac, q, topic)
		kf := kfakeWide(b)
		type side struct{ req, resp, fps, p50, p99, cpu []float64 }
		var with, without, fake side
		var native50, native99, reqRatio, respRatio, p50Ratio, p50Native, p50Fake []float64
		add := func(s *side, r wideRun) {
			s.req = append(s.req, medianInt(r.req))
			s.resp = append(s.resp, medianInt(r.resp))
			s.fps = append(s.fps, float64(r.fetches)/r.took)
			s.p50 = append(s.p50, percentile(r.lat, .5))
			s.p99 = append(s.p99, percentile(r.lat, .99))
			s.cpu = append(s.cpu, r.cpu/float64(max(r.fetches, 1))*1e3)
		}
		for r := 0; r < rounds; r++ {
			sess := br
			if profiles != "" {
				// The sessions side's trickle.
				sess.around = func() func() { return profileFacade(b, opsAddr, profiles, "wide-"+strconv.Itoa(r), dur) }
			}
			w := consumeWide(b, sess, false, rate, total, nil)
			wo := consumeWide(b, br, true, rate, total, nil)
			nl := longPollWide(b, q, topic, rate, total)
			kw := consumeWide(b, kf, false, rate, total, nil)
			add(&with, w)
			add(&without, wo)
			add(&fake, kw)
			native50, native99 = append(native50, percentile(nl, .5)), append(native99, percentile(nl, .99))
			reqRatio = append(reqRatio, medianInt(w.req)/medianInt(wo.req))
			respRatio = append(respRatio, medianInt(w.resp)/medianInt(wo.resp))
			p50Ratio = append(p50Ratio, percentile(w.lat, .5)/percentile(wo.lat, .5))
			p50Native = append(p50Native, percentile(w.lat, .5)/percentile(nl, .5))
			p50Fake = append(p50Fake, percentile(w.lat, .5)/percentile(kw.lat, .5))
			b.Logf("  round %d: p50 ms sessions %.1f, sessionless %.1f, native %.1f, kfake %.1f", r+1,
				percentile(w.lat, .5), percentile(wo.lat, .5), percentile(nl, .5), percentile(kw.lat, .5))
		}
		f := func(xs []float64) string {
			s := spreadOf(xs)
			return fmt.Sprintf("%.1f/%.1f/%.1f", s.min, s.med, s.max)
		}
		g := func(xs []float64) string {
			s := spreadOf(xs)
			return fmt.Sprintf("%.4f/%.4f/%.4f", s.min, s.med, s.max)
		}
		b.Logf("10,000 partitions, %d rec/s for %s x %d rounds (min/med/max):", rate, dur, rounds)
		b.Logf("  sessions:    request B/fetch %s, response B/fetch %s, fetches/s %s, p50 ms %s, p99 ms %s, facade CPU ms/fetch %s",
			f(with.req), f(with.resp), f(with.fps), f(with.p50), f(with.p99), f(with.cpu))
		b.Logf("  sessionless: request B/fetch %s, response B/fetch %s, fetches/s %s, p50 ms %s, p99 ms %s, facade CPU ms/fetch %s",
			f(without.req), f(without.resp), f(without.fps), f(without.p50), f(without.p99), f(without.cpu))
		b.Logf("  native Queen long poll (10 x 1,024): p50 ms %s, p99 ms %s", f(native50), f(native99))
		b.Logf("  kfake (sessions, in memory): request B/fetch %s, response B/fetch %s, fetches/s %s, p50 ms %s, p99 ms %s",
			f(fake.req), f(fake.resp), f(fake.fps), f(fake.p50), f(fake.p99))
		b.Logf("  sessions / sessionless: request %s, response %s, p50 %s; sessions p50 / native p50 %s; sessions p50 / kfake p50 %s",
			g(reqRatio), g(respRatio), g(p50Ratio), g(p50Native), g(p50Fake))
		b.ReportMetric(spreadOf(with.req).med, "sess-req-B/fetch")
		b.ReportMetric(spreadOf(without.req).med, "nosess-req-B/fetch")
		b.ReportMetric(spreadOf(reqRatio).med, "req-ratio")
		b.ReportMetric(spreadOf(with.p50).med, "sess-p50-ms")
		b.ReportMetric(spreadOf(native50).med, "native-p50-ms")
		b.ReportMetric(spreadOf(p50Native).med, "p50-vs-native")
		b.ReportMetric(spreadOf(p50Fake).med, "p50-vs-kfake")
	}
}
