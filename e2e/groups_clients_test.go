package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
)

// saramaHandler records what one sarama group member consumed and marks
// each message, which the auto-committer then commits.
type saramaHandler struct {
	mu  sync.Mutex
	got []rec
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		h.got = append(h.got, rec{partition: m.Partition, offset: m.Offset, key: m.Key, value: m.Value})
		h.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

func (h *saramaHandler) records() []rec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]rec(nil), h.got...)
}

// startSaramaMember runs one sarama consumer-group member until t ends or
// stop is called.
func startSaramaMember(t testing.TB, tg target, group, topic string) (*saramaHandler, func()) {
	t.Helper()
	c := saramaConfig()
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	c.Consumer.Group.Session.Timeout = 6 * time.Second
	c.Consumer.Group.Heartbeat.Interval = time.Second
	c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cg, err := sarama.NewConsumerGroup(tg.bootstrap, group, c)
	if err != nil {
		t.Fatalf("sarama consumer group: %v", err)
	}
	h := &saramaHandler{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) && ctx.Err() == nil {
				t.Logf("sarama consume: %v", err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	go func() {
		for err := range cg.Errors() {
			t.Logf("sarama group error: %v", err)
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			_ = cg.Close()
		})
	}
	t.Cleanup(stop)
	return h, stop
}

// testGroupSarama: two sarama members split the topic, each record is read
// once, and the commits land at the end of every partition.
func testGroupSarama(t *testing.T, tg target) {
	const parts = 4
	topic, group := uniq("grp-sarama"), uniq("g-sarama")
	createTopic(t, tg, topic, parts, nil)
	h1, stop1 := startSaramaMember(t, tg, group, topic)
	h2, stop2 := startSaramaMember(t, tg, group, topic)
	split := waitStable(t, tg, group, topic, 2, parts)
	for id, ps := range split {
		if len(ps) != 2 {
			t.Errorf("sarama member %s holds %v, want 2 of 4", id, ps)
		}
	}
	want := produceRound(t, tg, topic, parts, 5, "r1", 0)
	var got []rec
	eventually(t, 20*time.Second, "sarama members consumed every record", func() (bool, string) {
		got = append(h1.records(), h2.records()...)
		return len(got) >= len(want), fmt.Sprintf("%d of %d", len(got), len(want))
	})
	exactlyOnce(t, "sarama group", want, got)
	if len(h1.records()) == 0 || len(h2.records()) == 0 {
		t.Errorf("one sarama member read nothing: %d / %d", len(h1.records()), len(h2.records()))
	}
	time.Sleep(300 * time.Millisecond) // one auto-commit interval and then some
	assertCommitted(t, tg, group, topic, fill(parts, 5))

	// One member leaves; the other takes every partition and resumes each
	// at the committed offset.
	stop2()
	waitStable(t, tg, group, topic, 1, parts)
	r2 := produceRound(t, tg, topic, parts, 3, "r2", 5)
	eventually(t, 20*time.Second, "the remaining sarama member consumed round 2", func() (bool, string) {
		got = append(h1.records(), h2.records()...)
		return len(got) >= len(want)+len(r2), fmt.Sprintf("%d of %d", len(got), len(want)+len(r2))
	})
	time.Sleep(300 * time.Millisecond)
	exactlyOnce(t, "sarama group across a leave", append(append([]rec{}, want...), r2...), append(h1.records(), h2.records()...))
	stop1()
	assertCommitted(t, tg, group, topic, fill(parts, 8))
}

// kafkaGoGroupReader is a kafka-go Reader of topic in group that commits
// synchronously (CommitInterval 0), at suite timing.
func kafkaGoGroupReader(tg target, group, topic string) *kafkago.Reader {
	return kafkago.NewReader(kafkago.ReaderConfig{
		Brokers: tg.bootstrap, GroupID: group, Topic: topic,
		MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 250 * time.Millisecond,
		StartOffset: kafkago.FirstOffset, HeartbeatInterval: 500 * time.Millisecond,
		SessionTimeout: 6 * time.Second, RebalanceTimeout: 5 * time.Second,
		JoinGroupBackoff: 200 * time.Millisecond, CommitInterval: 0,
	})
}

// testGroupKafkaGo: a kafka-go Reader with a GroupID reads a topic and
// commits synchronously; a second Reader of the group resumes after it.
func testGroupKafkaGo(t *testing.T, tg target) {
	const parts = 2
	topic, group := uniq("grp-kgo2"), uniq("g-kafkago")
	createTopic(t, tg, topic, parts, nil)
	r1 := produceRound(t, tg, topic, parts, 5, "r1", 0)
	read := func(n int) []rec {
		t.Helper()
		r := kafkaGoGroupReader(tg, group, topic)
		defer r.Close()
		ctx := ctxT(t, 30*time.Second)
		var out []rec
		for len(out) < n {
			m, err := r.ReadMessage(ctx) // commits synchronously (CommitInterval 0)
			if err != nil {
				t.Fatalf("kafka-go group read %d of %d: %v", len(out), n, err)
			}
			out = append(out, rec{partition: int32(m.Partition), offset: m.Offset, key: m.Key, value: m.Value})
		}
		return out
	}
	exactlyOnce(t, "kafka-go reader 1", r1, read(len(r1)))
	assertCommitted(t, tg, group, topic, fill(parts, 5))
	r2 := produceRound(t, tg, topic, parts, 2, "r2", 5)
	exactlyOnce(t, "kafka-go reader 2 (resumed)", r2, read(len(r2)))
	assertCommitted(t, tg, group, topic, fill(parts, 7))
}

// testGroupKcat: librdkafka's group consumer (kcat -G) reads every record
// and commits them on Ctrl-C; a second kcat of the group reads only what
// came after.
func testGroupKcat(t *testing.T, tg target) {
	const parts = 2
	topic, group := uniq("grp-kcat"), uniq("g-kcat")
	createTopic(t, tg, topic, parts, nil)
	r1 := produceRound(t, tg, topic, parts, 3, "r1", 0)
	run := func(want []rec) {
		t.Helper()
		// auto.offset.reset rather than -o beginning: kcat applies -o to every
		// assigned partition and so would ignore the committed offsets.
		k := startKcat(t, "-b", tg.bootstrap[0], "-G", group, "-X", "auto.offset.reset=earliest", "-q", "-u", "-f", "%p %o %s\n", topic)
		k.waitLines(t, len(want), 30*time.Second)
		time.Sleep(300 * time.Millisecond) // room for a wrong extra record to show
		k.interrupt()
		lines := k.lines()
		var got []rec
		for _, l := range lines {
			f := strings.SplitN(l, " ", 3)
			if len(f) != 3 {
				t.Fatalf("kcat line %q", l)
			}
			p, perr := strconv.Atoi(f[0])
			o, oerr := strconv.ParseInt(f[1], 10, 64)
			if perr != nil || oerr != nil {
				t.Fatalf("kcat line %q: partition %v, offset %v", l, perr, oerr)
			}
			got = append(got, rec{partition: int32(p), offset: o, value: []byte(f[2])})
		}
		exactlyOnce(t, "kcat -G", want, got)
	}
	run(r1)
	assertCommitted(t, tg, group, topic, fill(parts, 3))
	r2 := produceRound(t, tg, topic, parts, 2, "r2", 3)
	run(r2)
	assertCommitted(t, tg, group, topic, fill(parts, 5))
}

// testGroupKafkaGoSplit: two kafka-go Readers of one group split the topic
// disjointly and covering, and read each record once between them.
func testGroupKafkaGoSplit(t *testing.T, tg target) {
	const parts = 4
	topic, group := uniq("grp-kgsplit"), uniq("g-kgsplit")
	createTopic(t, tg, topic, parts, nil)
	var (
		mu  sync.Mutex
		got []rec
	)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		r := kafkaGoGroupReader(tg, group, topic)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				got = append(got, rec{partition: int32(m.Partition), offset: m.Offset, key: m.Key, value: m.Value})
				mu.Unlock()
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitStable(t, tg, group, topic, 2, parts)
	want := produceRound(t, tg, topic, parts, 5, "r1", 0)
	eventually(t, 20*time.Second, "the kafka-go readers consumed every record", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(want), fmt.Sprintf("%d of %d", len(got), len(want))
	})
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	exactlyOnce(t, "kafka-go readers", want, got)
	mu.Unlock()
	assertCommitted(t, tg, group, topic, fill(parts, 5))
}
