//go:build chaos

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The chaos test (issue 11, Prove it), behind the build tag chaos so that
// it runs as a step of its own: `make chaos-short` (in `make test`) with
// the defaults below, `make chaos` at length. A three-node cluster on one queen-dev under continuous idempotent produce from franz-go, sarama and
// librdkafka and a two-member franz-go consumer group, while a nemesis
// SIGKILLs random facade nodes (each restarted after a random delay) and
// SIGKILLs and restarts queen-dev on its data directory and port. A checker
// in the style of Jepsen's Kafka workload then reads the topic back from
// the start and counts what the contract says never happens.
//
// The environment shapes a run; `make chaos` sets the long one:
//
//	CHAOS_KILLS          facade SIGKILLs (default 4)
//	CHAOS_QUEEN_RESTARTS queen-dev SIGKILL+restarts (default 1)
//	CHAOS_TIME           the faulted phase (default 35s; the settle after it is bounded by 50 s)
//	CHAOS_SEED           the nemesis's seed (default: from the clock; logged either way)

const chaosParts = 6

// chaosConfig is a run's shape, read from the environment.
type chaosConfig struct {
	kills, queenRestarts int
	phase                time.Duration
	seed                 uint64
}

func chaosEnv(t *testing.T) chaosConfig {
	t.Helper()
	c := chaosConfig{kills: 4, queenRestarts: 1, phase: 35 * time.Second, seed: uint64(time.Now().UnixNano())}
	atoi := func(name string, dst *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				t.Fatalf("%s=%q: want a count", name, v)
			}
			*dst = n
		}
	}
	atoi("CHAOS_KILLS", &c.kills)
	atoi("CHAOS_QUEEN_RESTARTS", &c.queenRestarts)
	if v := os.Getenv("CHAOS_TIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("CHAOS_TIME=%q: want a duration", v)
		}
		c.phase = d
	}
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: want an unsigned integer", v)
		}
		c.seed = s
	}
	return c
}

// TestChaos: see the top of the file. Lost acknowledged records, stored
// duplicates, acknowledgements whose (partition, offset) holds another
// record, committed-offset regressions, poll skips, records the group never
// got and librdkafka fatal errors must all be 0; redeliveries to the group
// (at least once) are reported.
func TestChaos(t *testing.T) {
	cfg := chaosEnv(t)
	// CI shows a failed run's tail, which the processes' logs fill: the
	// verdict is said again after them (this cleanup runs last).
	var verdict []string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos verdict (seed %d):\n%s", cfg.seed, strings.Join(verdict, "\n"))
		}
	})
	say := func(fail bool, f string, args ...any) {
		s := fmt.Sprintf(f, args...)
		verdict = append(verdict, s)
		if fail {
			t.Error(s)
		} else {
			t.Log(s)
		}
	}
	t.Logf("chaos: seed %d (CHAOS_SEED=%d repeats the nemesis), %d facade kills, %d queen-dev restarts over %v",
		cfg.seed, cfg.seed, cfg.kills, cfg.queenRestarts, cfg.phase)
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	start := time.Now()

	c := newTestCluster(t, clusterOpts{nodes: 3})
	topic, group := uniq("chaos"), uniq("g-chaos")
	c.createTopic(t, topic, chaosParts)
	seeds := c.addrs()

	stop := make(chan struct{})
	var produced sync.WaitGroup
	var a acks
	produceKgoChaos(t, seeds, topic, stop, &produced, &a)
	produceSaramaChaos(t, seeds, topic, stop, &produced, &a)
	produceRdkChaos(t, seeds, topic, stop, &produced, &a)

	ps := &polls{seen: map[string]int{}}
	consumed := make(chan struct{})
	var consumers sync.WaitGroup
	for m := 1; m <= 2; m++ {
		consumeGroupChaos(t, seeds, topic, group, m, consumed, &consumers, ps)
	}
	regressions, stopWatch := watchCommits(t, c, group, topic, chaosParts)

	// The nemesis: the faults shuffled, one per slot of the phase, each at
	// a random point of the first half of its slot so that it has healed
	// before the next.
	faults := make([]bool, cfg.kills+cfg.queenRestarts) // true: queen-dev
	for i := range cfg.queenRestarts {
		faults[i] = true
	}
	rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	slot := cfg.phase / time.Duration(max(len(faults), 1))
	phaseStart := time.Now()
	for i, queen := range faults {
		at := time.Duration(i)*slot + time.Duration(rng.Int64N(int64(slot/2)+1))
		time.Sleep(time.Until(phaseStart.Add(at)))
		down := 200*time.Millisecond + time.Duration(rng.Int64N(int64(3800*time.Millisecond)))
		if queen {
			t.Logf("chaos %.1fs: SIGKILL queen-dev, restart after %v", time.Since(start).Seconds(), down.Round(time.Millisecond))
			c.dev.kill()
			time.Sleep(down)
			if err := c.dev.restart(); err != nil {
				verdict = append(verdict, "restart queen-dev: "+err.Error())
				t.Fatalf("restart queen-dev: %v\n%s", err, c.dev.Out.From(0))
			}
			continue
		}
		id := 1 + rng.IntN(len(c.nodes))
		t.Logf("chaos %.1fs: SIGKILL node %d, restart after %v", time.Since(start).Seconds(), id, down.Round(time.Millisecond))
		c.node(id).kill()
		time.Sleep(down)
		if err := c.node(id).restart(); err != nil {
			verdict = append(verdict, fmt.Sprintf("restart node %d: %v", id, err))
			t.Fatalf("restart node %d: %v\n%s", id, err, c.node(id).Out.From(0))
		}
	}
	time.Sleep(time.Until(phaseStart.Add(cfg.phase)))

	// Settle: the producers stop and drain, the checker reads everything
	// back, the group consumes until it has been given every record.
	close(stop)
	produced.Wait()
	t.Logf("chaos %.1fs: producers stopped", time.Since(start).Seconds())
	stored := readToEnd(t, seeds, topic, kgo.ReadUncommitted())
	storedIDs := map[string]bool{}
	for _, r := range stored {
		storedIDs[string(r.Value)] = true
	}
	var missing int
	covered := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if covered, missing = ps.covers(storedIDs); covered {
			break
		}
	}
	close(consumed)
	consumers.Wait()
	stopWatch()

	rep := checkChaos(a.recs, stored, ps.recs)
	a.mu.Lock()
	say(false, "chaos %.1fs: %d acknowledged (%d stored), client errors %v, %d consumer fetch errors, %d failed commits",
		time.Since(start).Seconds(), len(a.recs), len(stored), a.errs, ps.errs, ps.commits)
	say(false, "chaos: lost %d, stored duplicates %d, acknowledged offset mismatches %d, committed-offset regressions %d, poll skips %d, group never given %d, redelivered to the group %d (at least once), non-monotonic polls %d, acknowledged at no offset %d (librdkafka's implicit acks)",
		rep.lost, rep.storedDups, rep.mismatched, regressions.Load(), rep.skips, missing, rep.redelivered, rep.backwards, rep.unplaced)
	if len(a.fatals) > 0 {
		say(true, "fatal producer errors: %v", a.fatals)
	}
	a.mu.Unlock()
	for _, d := range rep.details {
		say(true, "%s", d)
	}
	if rep.lost > 0 || rep.storedDups > 0 || rep.mismatched > 0 || rep.skips > 0 {
		say(true, "seed %d: %d lost, %d stored duplicates, %d acknowledged offset mismatches, %d poll skips", cfg.seed, rep.lost, rep.storedDups, rep.mismatched, rep.skips)
	}
	if n := regressions.Load(); n > 0 {
		say(true, "seed %d: %d committed-offset regressions", cfg.seed, n)
	}
	if !covered {
		say(true, "seed %d: the group was never given %d of %d stored records", cfg.seed, missing, len(storedIDs))
	}
	if len(a.recs) == 0 {
		say(true, "seed %d: nothing acknowledged", cfg.seed)
	}
}

// newChaosProducer is the idempotent franz-go producer of the chaos tests:
// records go to the partition each names, retried every 50 ms for up to
// two minutes through the faults.
func newChaosProducer(t *testing.T, seeds []string, topic string) *kgo.Client {
	return newKgo(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.RecordDeliveryTimeout(2*time.Minute), kgo.RetryTimeout(time.Minute))
}

// produceKgoChaos runs an idempotent franz-go producer until stop, a wave
// of records at a time, round-robin over the partitions.
func produceKgoChaos(t *testing.T, seeds []string, topic string, stop <-chan struct{}, wg *sync.WaitGroup, a *acks) {
	cl := newChaosProducer(t, seeds, topic)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var inflight sync.WaitGroup
		for i := 0; ; i++ {
			select {
			case <-stop:
				inflight.Wait()
				return
			default:
			}
			inflight.Add(1)
			id := chaosID("kgo", i)
			cl.Produce(context.Background(), &kgo.Record{Partition: int32(i % chaosParts), Value: []byte(id)}, func(r *kgo.Record, err error) {
				defer inflight.Done()
				if err != nil {
					a.failed("franz-go")
					return
				}
				a.ok(id, r.Partition, r.Offset)
			})
			if i%20 == 19 {
				inflight.Wait()
			}
		}
	}()
}

// produceSaramaChaos runs an idempotent sarama sync producer until stop.
func produceSaramaChaos(t *testing.T, seeds []string, topic string, stop <-chan struct{}, wg *sync.WaitGroup, a *acks) {
	c := saramaConfig()
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Retry.Max = 100
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	c.Metadata.Retry.Max = 100
	p, err := sarama.NewSyncProducer(seeds, c)
	if err != nil {
		t.Fatalf("sarama producer: %v", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer p.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := chaosID("sarama", i)
			part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: int32(i % chaosParts), Value: sarama.StringEncoder(id)})
			if err != nil {
				a.failed("sarama")
				time.Sleep(100 * time.Millisecond)
				continue
			}
			a.ok(id, part, off)
		}
	}()
}

// produceRdkChaos runs an idempotent librdkafka producer until stop, at
// most 100 records in flight. Any fatal error is recorded as one.
func produceRdkChaos(t *testing.T, seeds []string, topic string, stop <-chan struct{}, wg *sync.WaitGroup, a *acks) {
	p := newRdkIdempotentDebug(t, strings.Join(seeds, ","), "eos")
	dr := make(chan kafka.Event, 128)
	slots := make(chan struct{}, 100)
	var inflight sync.WaitGroup
	go func() {
		for e := range p.Events() {
			if ke, ok := e.(kafka.Error); ok && ke.IsFatal() {
				a.fatal("librdkafka: " + ke.Error())
			}
		}
	}()
	go func() {
		for e := range dr {
			m := e.(*kafka.Message)
			if m.TopicPartition.Error != nil {
				a.failed("librdkafka")
			} else {
				a.ok(string(m.Value), m.TopicPartition.Partition, int64(m.TopicPartition.Offset))
			}
			<-slots
			inflight.Done()
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				inflight.Wait()
				if err := p.GetFatalError(); err != nil {
					a.fatal("librdkafka: " + err.Error())
				}
				return
			case slots <- struct{}{}:
			}
			id := chaosID("rdk", i)
			inflight.Add(1)
			m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % chaosParts)}, Value: []byte(id)}
			if err := p.Produce(m, dr); err != nil {
				inflight.Done()
				<-slots
				var ke kafka.Error
				if errors.As(err, &ke) && ke.IsFatal() {
					a.fatal("librdkafka produce: " + err.Error())
					return
				}
				a.failed("librdkafka")
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
}
