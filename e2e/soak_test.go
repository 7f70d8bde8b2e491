//go:build soak

package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// The soak (issue 20), behind the build tag soak and run by `make soak`,
// never by `make test`: a three-node cluster under a mixed workload for
// SOAK_TIME (default 30m) while every facade's VmRSS and goroutine count
// are sampled every 10 s. The workload:
//
//   - two idempotent franz-go producers, 20 records/s each, one record per
//     produce call so that about one produce request in a hundred carries
//     a 64-200 KiB record (its padding in a header, its id in the value);
//   - the exactly-once worker of txn_eos_test.go (franz-go's
//     GroupTransactSession, its own process) copying that topic to an
//     output topic, read_committed;
//   - a group of three members (the chaos test's) consuming the topic, one
//     of them stopped and replaced by a new member every SOAK_TIME/12;
//   - a trickle into a topic of 2,000 partitions read by a consumer of all
//     of them, over fetch sessions at each node;
//   - admin calls every 5 s: list topics, describe the group, list end
//     offsets, describe configs, create and delete a topic.
//
// The run fails if a facade's RSS or goroutine count grows beyond noise
// once warm (judgeGrowth), if any process logs a panic, or if a record is
// lost or duplicated: every acknowledged record of the main topic stored
// once and given to the group (at least once, exactly once unless a commit
// failed), the exactly-once output holding each input record once, the
// wide consumer given each acknowledged trickle record once.

const (
	soakParts    = 6
	soakWide     = 2000
	soakSample   = 10 * time.Second
	soakRate     = 20 // records per second per producer
	soakBigEvery = 100
)

// soakConfig is a run's shape: its length, the warm-up the growth check
// ignores (a sixth of the run, at least a minute and at most 5) and how
// often the group member restarts.
type soakConfig struct {
	dur, warm, restart time.Duration
}

func soakEnv(t *testing.T) soakConfig {
	t.Helper()
	dur := 30 * time.Minute
	if v := os.Getenv("SOAK_TIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			t.Fatalf("SOAK_TIME=%q: want a duration of a minute or more", v)
		}
		dur = d
	}
	return soakConfig{dur: dur, warm: min(5*time.Minute, max(time.Minute, dur/6)), restart: max(dur/12, 15*time.Second)}
}

// soakSampleSet is one facade's samples, in time order.
type soakSampleSet struct {
	at   []time.Duration
	rss  []float64 // bytes
	gors []float64
	errs int
}

// goroutines reads go_goroutines from a facade's operator listener.
func goroutines(base string) (float64, error) {
	resp, err := httpc.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	s, err := testsupport.ParseScrape(resp.Body)
	if err != nil {
		return 0, err
	}
	v, ok := s.Sum("go_goroutines")
	if !ok {
		return 0, fmt.Errorf("no go_goroutines")
	}
	return v, nil
}

// produceCount counts a producer's Produce requests and those of 64 KiB
// or more (a kgo hook).
type produceCount struct{ all, big atomic.Int64 }

func (h *produceCount) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == kmsg.Produce.Int16() && err == nil {
		h.all.Add(1)
		if n >= 64<<10 {
			h.big.Add(1)
		}
	}
}

// produceSoak runs an idempotent franz-go producer at soakRate records a
// second until stop, one record per call, round robin over soakParts
// partitions; every soakBigEvery-th record carries a 64-200 KiB header.
func produceSoak(t *testing.T, seeds []string, topic, name string, stop <-chan struct{}, wg *sync.WaitGroup, a *acks, pc *produceCount) {
	cl := newKgo(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.WithHooks(pc), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.RecordDeliveryTimeout(2*time.Minute), kgo.RetryTimeout(time.Minute))
	wg.Add(1)
	go func() {
		defer wg.Done()
		var inflight sync.WaitGroup
		defer inflight.Wait()
		tick := time.NewTicker(time.Second / soakRate)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			id := chaosID(name, i)
			r := &kgo.Record{Partition: int32(i % soakParts), Value: []byte(id)}
			if i%soakBigEvery == soakBigEvery-1 {
				// Random, so that the default compression leaves the
				// request as large as the record.
				pad := make([]byte, 64<<10+rand.IntN(136<<10+1))
				for j := range pad {
					pad[j] = byte(rand.Uint32())
				}
				r.Headers = []kgo.RecordHeader{{Key: "pad", Value: pad}}
			}
			inflight.Add(1)
			cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				defer inflight.Done()
				if err != nil {
					a.failed(name)
					return
				}
				a.ok(id, r.Partition, r.Offset)
			})
		}
	}()
}

// TestSoak: see the top of the file.
func TestSoak(t *testing.T) {
	cfg := soakEnv(t)
	t.Logf("soak: %v, growth judged after %v, a group member restarted every %v; load at start: %s", cfg.dur, cfg.warm, cfg.restart, loadAvg())
	start := time.Now()

	ops := make([]int, 3)
	for i := range ops {
		ops[i] = freePort(t)
	}
	c := newTestCluster(t, clusterOpts{nodes: 3,
		env: map[string]string{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000"},
		nodeEnv: func(id int) map[string]string {
			return map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "127.0.0.1:" + strconv.Itoa(ops[id-1])}
		}})
	seeds := c.addrs()
	topic, out, wide := uniq("soak"), uniq("soak-eos-out"), uniq("soak-wide")
	group, eosGroup := uniq("g-soak"), uniq("g-soak-eos")
	c.createTopic(t, topic, soakParts)
	c.createTopic(t, out, soakParts)
	c.createTopic(t, wide, soakWide)
	t.Logf("soak %.0fs: cluster up, topics created", time.Since(start).Seconds())

	stop := make(chan struct{})
	var produced, background sync.WaitGroup
	var a, wa acks
	var pc produceCount
	produceSoak(t, seeds, topic, "p1", stop, &produced, &a, &pc)
	produceSoak(t, seeds, topic, "p2", stop, &produced, &a, &pc)

	eos := startEOSWorker(t, eosWorker{name: "soak", bootstrap: seeds[0], in: topic, out: out, group: eosGroup, txnID: uniq("tid-soak")})

	// The group: members 1-3, member 3's place taken by a new member
	// (4, 5, ...) every cfg.restart, the old one committing what it polled
	// and leaving first.
	ps := &polls{seen: map[string]int{}}
	consumed := make(chan struct{})
	var consumers sync.WaitGroup
	for m := 1; m <= 2; m++ {
		consumeGroupChaos(t, seeds, topic, group, m, consumed, &consumers, ps)
	}
	var restarts atomic.Int64
	background.Add(1)
	go func() {
		defer background.Done()
		for m := 3; ; m++ {
			done := make(chan struct{})
			var one sync.WaitGroup
			cl := consumeGroupChaos(t, seeds, topic, group, m, done, &one, ps)
			select {
			case <-time.After(cfg.restart):
			case <-consumed:
			}
			close(done)
			one.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				ps.mu.Lock()
				ps.commits++
				ps.mu.Unlock()
			}
			cancel()
			cl.Close()
			select {
			case <-consumed:
				return
			default:
				restarts.Add(1)
			}
		}
	}()
	regressions, stopWatch := watchCommits(t, c, group, topic, soakParts)

	// The trickle over 2,000 partitions and its consumer of them all.
	wp := newKgo(t, seeds, kgo.DefaultProduceTopic(wide), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	produced.Add(1)
	go func() {
		defer produced.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				if err := wp.Flush(context.Background()); err != nil {
					wa.failed("wide")
				}
				return
			case <-tick.C:
			}
			id := chaosID("w", i)
			wp.Produce(context.Background(), &kgo.Record{Partition: rand.Int32N(soakWide), Value: []byte(id)}, func(r *kgo.Record, err error) {
				if err != nil {
					wa.failed("wide")
					return
				}
				wa.ok(id, r.Partition, r.Offset)
			})
		}
	}()
	var wideMu sync.Mutex
	wideSeen := map[string]int{}
	wideDone := make(chan struct{})
	wc := newKgo(t, seeds, kgo.ConsumeTopics(wide), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	background.Add(1)
	go func() {
		defer background.Done()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-wideDone; cancel() }()
		for ctx.Err() == nil {
			wc.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				wideMu.Lock()
				wideSeen[string(r.Value)]++
				wideMu.Unlock()
			})
		}
	}()

	// Admin calls.
	var adminCalls, adminErrs atomic.Int64
	adm := newAdmin(t, seeds)
	background.Add(1)
	go func() {
		defer background.Done()
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-consumed:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			tmp := uniq("soak-tmp")
			calls := []func() error{
				func() error { _, err := adm.ListTopics(ctx); return err },
				func() error { _, err := adm.DescribeGroups(ctx, group); return err },
				func() error { _, err := adm.ListEndOffsets(ctx, topic); return err },
				func() error { _, err := adm.DescribeTopicConfigs(ctx, topic); return err },
				func() error {
					r, err := adm.CreateTopic(ctx, 1, 1, nil, tmp)
					if err == nil {
						err = r.Err
					}
					return err
				},
				func() error {
					rs, err := adm.DeleteTopics(ctx, tmp)
					if err == nil {
						err = rs.Error()
					}
					return err
				},
			}
			for _, call := range calls {
				adminCalls.Add(1)
				if err := call(); err != nil {
					if adminErrs.Add(1) <= 5 {
						t.Logf("admin call: %v", err)
					}
				}
			}
			cancel()
		}
	}()

	// Sampling, until the run's end.
	samples := make([]soakSampleSet, len(c.nodes))
	sample := func() {
		for i, f := range c.nodes {
			s := &samples[i]
			rss, _, err := testsupport.ProcMemory(f.pid())
			g, gerr := goroutines("http://127.0.0.1:" + strconv.Itoa(ops[i]))
			if err != nil || gerr != nil {
				s.errs++
				t.Logf("sample node %d: %v / %v", i+1, err, gerr)
				continue
			}
			s.at = append(s.at, time.Since(start))
			s.rss = append(s.rss, float64(rss))
			s.gors = append(s.gors, g)
		}
	}
	runStart := time.Now()
	tick := time.NewTicker(soakSample)
	for n := 0; time.Since(runStart) < cfg.dur; n++ {
		<-tick.C
		sample()
		if n%6 == 5 {
			var b strings.Builder
			for i, s := range samples {
				if k := len(s.rss); k > 0 {
					fmt.Fprintf(&b, " node %d %.1f MiB %.0f goroutines;", i+1, s.rss[k-1]/(1<<20), s.gors[k-1])
				}
			}
			t.Logf("soak %.0fs:%s %d acknowledged, %d polled, load %s", time.Since(start).Seconds(), b.String(), a.len(), ps.len(), loadAvg())
		}
	}
	tick.Stop()
	loadEnd := loadAvg()

	// Settle: the producers drain, everything is read back, the group, the
	// exactly-once worker and the wide consumer catch up.
	close(stop)
	produced.Wait()
	t.Logf("soak %.0fs: producers stopped", time.Since(start).Seconds())
	stored := readToEnd(t, seeds, topic, kgo.ReadUncommitted())
	storedIDs := map[string]bool{}
	want := map[int32][]string{}
	for _, r := range stored {
		storedIDs[string(r.Value)] = true
		want[r.Partition] = append(want[r.Partition], string(r.Value))
		r.Headers = nil // the padding, held no longer than needed
	}
	var missing int
	covered := false
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if covered, missing = ps.covers(storedIDs); covered {
			break
		}
	}
	inEnds := endOffsets(t, seeds, topic)
	waitCommitted(t, c.target(), eosGroup, topic, inEnds, 3*time.Minute)
	wideMissing := 0
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		wideMissing = 0
		wideMu.Lock()
		for _, k := range wa.recs {
			if wideSeen[k.id] == 0 {
				wideMissing++
			}
		}
		wideMu.Unlock()
		if wideMissing == 0 {
			break
		}
	}
	close(consumed)
	close(wideDone)
	consumers.Wait()
	background.Wait()
	stopWatch()

	// Verdict.
	fail := false
	say := func(bad bool, f string, args ...any) {
		t.Helper()
		if bad {
			fail = true
			t.Errorf(f, args...)
		} else {
			t.Logf(f, args...)
		}
	}
	for i, s := range samples {
		cut := 0
		for cut < len(s.at) && s.at[cut] < runStart.Sub(start)+cfg.warm {
			cut++
		}
		if len(s.rss) == 0 {
			say(true, "node %d: no samples (%d failed)", i+1, s.errs)
			continue
		}
		r, g := spreadOf(s.rss), spreadOf(s.gors)
		say(false, "node %d: %d samples (%d failed); RSS min/median/max %.1f/%.1f/%.1f MiB, goroutines %s",
			i+1, len(s.rss), s.errs, r.min/(1<<20), r.med/(1<<20), r.max/(1<<20), g)
		mid, last, grew := judgeGrowth(s.rss[cut:], rssSlack)
		say(grew, "node %d RSS after warm-up: max of the middle third %.1f MiB, of the last third %.1f MiB (allowed %.1f)", i+1, mid/(1<<20), last/(1<<20), (mid+rssSlack(mid))/(1<<20))
		mid, last, grew = judgeGrowth(s.gors[cut:], gorSlack)
		say(grew, "node %d goroutines after warm-up: max of the middle third %.0f, of the last third %.0f (allowed %.0f)", i+1, mid, last, mid+gorSlack(mid))
		if len(s.rss)-cut < 3 {
			say(true, "node %d: %d samples after the warm-up, too few to judge", i+1, len(s.rss)-cut)
		}
	}
	procs := []*testsupport.Proc{c.dev.Proc, eos}
	for _, f := range c.nodes {
		procs = append(procs, f.Proc)
	}
	panics := 0
	for _, p := range procs {
		for _, l := range strings.Split(p.Out.From(0), "\n") {
			if strings.Contains(l, "panic:") || strings.Contains(l, "handler panic") {
				panics++
				say(true, "%s logged a panic: %s", p.Name, l)
				break
			}
		}
	}
	say(false, "panics: %d of %d processes logged one", panics, len(procs))

	rep := checkChaos(a.recs, stored, ps.recs) // every writer has stopped
	a.mu.Lock()
	say(false, "main topic: %d acknowledged, %d stored, %d produce errors %v, %d fatal; %d produce requests, %d of 64 KiB or more",
		len(a.recs), len(stored), len(a.errs), a.errs, len(a.fatals), pc.all.Load(), pc.big.Load())
	a.mu.Unlock()
	say(false, "group: %d polled by %d members (%d restarts), %d fetch errors, %d failed commits, %d committed-offset regressions",
		ps.len(), 3+restarts.Load(), restarts.Load(), ps.errs, ps.commits, regressions.Load())
	for _, d := range rep.details {
		say(true, "%s", d)
	}
	say(rep.lost+rep.storedDups+rep.mismatched+rep.skips > 0, "lost %d, stored duplicates %d, acknowledged offset mismatches %d, poll skips %d, non-monotonic polls %d",
		rep.lost, rep.storedDups, rep.mismatched, rep.skips, rep.backwards)
	say(!covered, "the group was never given %d of %d stored records", missing, len(storedIDs))
	// A redelivery is at-least-once only where a commit failed; the
	// members commit what they polled before every rebalance and leave.
	say(rep.redelivered > 0 && ps.commits == 0, "redelivered to the group %d (with %d failed commits)", rep.redelivered, ps.commits)
	say(regressions.Load() > 0, "committed-offset regressions %d", regressions.Load())
	say(len(a.recs) == 0, "acknowledged %d", len(a.recs))

	t.Logf("exactly-once output: the worker's group committed %d input records", sumOffsets(inEnds))
	before := t.Failed()
	assertCopiedOnce(t, seeds, out, inEnds, want, len(storedIDs))
	fail = fail || t.Failed() != before
	say(false, "exactly-once output: end offsets sum to %d, each input record once read committed: %v", sumOffsets(endOffsets(t, seeds, out)), t.Failed() == before)

	wideMu.Lock()
	wideDups := 0
	for _, n := range wideSeen {
		if n > 1 {
			wideDups++
		}
	}
	say(wideMissing > 0 || wideDups > 0 || len(wa.recs) == 0, "wide topic (%d partitions): %d acknowledged, %d consumed, %d never consumed, %d consumed more than once, %d produce errors",
		soakWide, len(wa.recs), len(wideSeen), wideMissing, wideDups, len(wa.errs))
	wideMu.Unlock()
	say(adminCalls.Load() == 0 || adminErrs.Load()*10 > adminCalls.Load(), "admin: %d calls, %d errors", adminCalls.Load(), adminErrs.Load())
	t.Logf("soak %.0fs: load at the end of the run %s; passed %v", time.Since(start).Seconds(), loadEnd, !fail)
}

// len is how many records were polled, or acknowledged, so far.
func (p *polls) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.recs)
}

func (a *acks) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.recs)
}
