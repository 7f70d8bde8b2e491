package e2e

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Durable idempotence (issue 9): each idempotent record is pushed with a
// Queen transactionId from its producer id, epoch and sequence, so a batch
// whose push Queen stored but whose answer the facade never got is, on the
// client's retry, answered duplicate with its original offsets. These tests
// lose answers for real, between a facade and queen-dev, and restart the
// facade under a producer, and count every stored record.

// startFacadeAt starts a facade whose Queen is queenURL (a proxy), killed
// when t ends.
func startFacadeAt(t testing.TB, queenURL string, overrides map[string]string) *facade {
	t.Helper()
	requireBin(t, queenKafkBin)
	f := newFacade(queenURL, freePort(t), overrides)
	t.Cleanup(f.kill)
	if err := f.start(); err != nil {
		t.Fatalf("%v\n%s", err, f.Out.From(0))
	}
	f.attachLogs(t)
	return f
}

// storedAll is every value stored in topic's partitions 0..parts-1, read
// straight from queen-dev to the end of each partition.
func storedAll(t testing.TB, dev *queenDev, topic string, parts int) []string {
	t.Helper()
	var vals []string
	for p := range parts {
		for off := int64(0); ; {
			res := dev.fetch(t, topic, strconv.Itoa(p), off)
			if res.Error != "" {
				t.Fatalf("fetch %s[%d]@%d: %s", topic, p, off, res.Error)
			}
			for _, r := range res.Records {
				e := decodeEnvelope(t, r.Payload)
				if e.V == nil {
					t.Fatalf("stored value of %s[%d]@%d is null", topic, p, r.Offset)
				}
				v, err := base64.StdEncoding.DecodeString(*e.V)
				if err != nil {
					t.Fatalf("stored value of %s[%d]@%d: %v", topic, p, r.Offset, err)
				}
				vals = append(vals, string(v))
				off = r.Offset + 1
			}
			if off >= res.HighWatermark || len(res.Records) == 0 {
				break
			}
		}
	}
	return vals
}

// exactlyOnceStored checks that every acknowledged value is stored exactly
// once and that nothing is stored twice; sent is everything the producer
// was given, each value once.
func exactlyOnceStored(t testing.TB, what string, sent, acked []string, stored []string) {
	t.Helper()
	count := make(map[string]int, len(stored))
	for _, v := range stored {
		count[v]++
	}
	dups, lost := 0, 0
	for _, v := range sent {
		if count[v] > 1 {
			dups++
			if dups <= 5 {
				t.Errorf("%s: %q stored %d times", what, v, count[v])
			}
		}
	}
	for _, v := range acked {
		if count[v] == 0 {
			lost++
			if lost <= 5 {
				t.Errorf("%s: %q acknowledged but not stored", what, v)
			}
		}
	}
	if len(stored) != len(count) || dups > 0 || lost > 0 {
		t.Errorf("%s: %d sent, %d acknowledged, %d stored (%d distinct): %d duplicated, %d lost", what, len(sent), len(acked), len(stored), len(count), dups, lost)
	}
}

// wave is how many records the producers below send before waiting for
// their acknowledgements: a stream of many pushes, not one burst.
const wave = 50

// produceKgoAll sends values round-robin over parts partitions through an
// idempotent franz-go producer, a wave at a time, and returns the
// acknowledged ones.
func produceKgoAll(t testing.TB, seeds []string, topic string, parts int, values []string) []string {
	t.Helper()
	cl := newKgo(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }), kgo.RecordDeliveryTimeout(90*time.Second))
	ctx := ctxT(t, 120*time.Second)
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	for i, v := range values {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Partition: int32(i % parts), Value: []byte(v)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("franz-go delivery of %s: %v", r.Value, err)
				return
			}
			acked = append(acked, string(r.Value))
		})
		if i%wave == wave-1 {
			wg.Wait()
		}
	}
	wg.Wait()
	return acked
}

// newRdkIdempotent is a librdkafka idempotent producer, its debug contexts
// eos, protocol and msg.
func newRdkIdempotent(t *testing.T, seeds string) *kafka.Producer {
	t.Helper()
	return newRdkIdempotentDebug(t, seeds, "eos,protocol,msg")
}

// newRdkIdempotentDebug is newRdkIdempotent logging the debug contexts
// debug (a long run keeps its log small with fewer).
func newRdkIdempotentDebug(t *testing.T, seeds, debug string) *kafka.Producer {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": seeds, "enable.idempotence": true, "acks": "all",
		"linger.ms": 2, "retry.backoff.ms": 50, "retry.backoff.max.ms": 200, "message.timeout.ms": 90000,
		"reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200,
		"go.logs.channel.enable": true, "debug": debug,
	})
	if err != nil {
		t.Fatal(err)
	}
	rdkafkaLogs(t, "idempotent producer", p.Logs())
	t.Cleanup(p.Close)
	return p
}

// produceRdkAll sends values round-robin over parts partitions through p,
// a wave at a time, calling between(i) before value i, and returns the
// acknowledged ones. A
// fatal error of the idempotent producer fails t.
func produceRdkAll(t *testing.T, p *kafka.Producer, topic string, parts int, values []string, between func(i int)) []string {
	t.Helper()
	dr := make(chan kafka.Event, len(values))
	var acked []string
	deadline := time.After(120 * time.Second)
	await := func(n int) {
		for range n {
			select {
			case e := <-dr:
				m := e.(*kafka.Message)
				if m.TopicPartition.Error != nil {
					t.Errorf("librdkafka delivery of %s: %v", m.Value, m.TopicPartition.Error)
					continue
				}
				acked = append(acked, string(m.Value))
			case <-deadline:
				t.Fatalf("librdkafka delivery reports: %d of %d after 120 s", len(acked), len(values))
			}
		}
	}
	for i, v := range values {
		if between != nil {
			between(i)
		}
		m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % parts)}, Value: []byte(v)}
		if err := p.Produce(m, dr); err != nil {
			t.Fatalf("librdkafka produce %s: %v", v, err)
		}
		if i%wave == wave-1 {
			await(wave)
		}
	}
	await(len(values) % wave)
	if err := p.GetFatalError(); err != nil {
		t.Errorf("librdkafka idempotent producer raised a fatal error: %v", err)
	}
	return acked
}

// TestLostPushAnswers: a proxy between the facade and queen-dev forwards
// every other push and then loses its answer (the connection dropped, or a
// 503 in place of the 201), so the facade answers a batch Queen stored with
// a retriable error. An idempotent franz-go producer and an idempotent
// librdkafka producer each send their records through it: every
// acknowledged record is stored exactly once, none twice.
func TestLostPushAnswers(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	const parts, records, faults = 3, 1500, 10
	for _, loss := range []struct {
		name string
		how  pushLoss
	}{{"dropped", dropAnswer}, {"503", answer503}} {
		for _, client := range []string{"franz-go", "librdkafka"} {
			t.Run(loss.name+"/"+client, func(t *testing.T) {
				t.Parallel()
				px := startQueenProxy(t, dev.url)
				f := startFacadeAt(t, px.url, nil)
				tg := target{bootstrap: []string{f.addr}, dev: dev}
				topic := uniq("lostpush")
				createTopic(t, tg, topic, parts, nil)
				values := make([]string, records)
				for i := range values {
					values[i] = fmt.Sprintf("%s-%s-%d", loss.name, client, i)
				}
				px.failPushes(2, faults, loss.how)
				var acked []string
				if client == "franz-go" {
					acked = produceKgoAll(t, tg.bootstrap, topic, parts, values)
				} else {
					acked = produceRdkAll(t, newRdkIdempotent(t, f.addr), topic, parts, values, nil)
				}
				px.failPushes(0, 0, keepAnswer)
				if n := px.faulted.Load(); n == 0 {
					t.Fatalf("the proxy lost no push answer: the test provoked no retry")
				}
				t.Logf("%s: %d push answers lost of %d pushes, %d of %d records acknowledged", t.Name(), px.faulted.Load(), px.pushes.Load(), len(acked), len(values))
				if len(acked) != len(values) {
					t.Errorf("%d of %d records acknowledged", len(acked), len(values))
				}
				exactlyOnceStored(t, t.Name(), values, acked, storedAll(t, dev, topic, parts))
			})
		}
	}
}

// TestFacadeKill9IdempotentLibrdkafka: an idempotent librdkafka producer
// writes through one facade that is killed -9 four times mid-stream and
// restarted on the same address each time. A proxy holds every push's
// answer 20 ms after queen-dev stored it, so a kill lands with pushes stored
// and unanswered. The restarted facade holds no sequence window and accepts
// the producer's next batches (issue 9, as Kafka 3.9 accepts a producer it
// holds no state for); the retries of batches stored before the kill are
// answered from Queen's dedup window. The producer carries on without a
// fatal error, every record is acknowledged, and each is stored exactly
// once.
func TestFacadeKill9IdempotentLibrdkafka(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	px := startQueenProxy(t, dev.url)
	px.pushDelay.Store(int64(20 * time.Millisecond))
	f := startFacadeAt(t, px.url, nil)
	tg := target{bootstrap: []string{f.addr}, dev: dev}
	const parts, records = 3, 3000
	topic := uniq("kill9-rdk")
	createTopic(t, tg, topic, parts, nil)
	values := make([]string, records)
	for i := range values {
		values[i] = "k9-" + strconv.Itoa(i)
	}
	p := newRdkIdempotent(t, f.addr)
	acked := produceRdkAll(t, p, topic, parts, values, func(i int) {
		if i%(records/4) == records/4-wave/2 { // four kills, half a wave in flight
			time.Sleep(10 * time.Millisecond)
			f.kill()
			if err := f.restart(); err != nil {
				t.Fatalf("restart: %v", err)
			}
		}
	})
	if len(acked) != len(values) {
		t.Errorf("%d of %d records acknowledged", len(acked), len(values))
	}
	exactlyOnceStored(t, "across kill -9", values, acked, storedAll(t, dev, topic, parts))
}

// TestNodeMoveIdempotentLibrdkafka: the node move. An idempotent librdkafka
// producer writes to a three-node cluster, each partition through its
// advertised leader; node 3 is killed -9 mid-stream, with pushes stored and
// unanswered (its proxy holds every push's answer 20 ms after queen-dev
// stored it), and never comes back. Once the survivors drop it (one TTL),
// its partitions' batches go to a node that has never seen the producer:
// accepted (issue 9), their retries answered from Queen's dedup window. The
// producer carries on without a fatal error, every record is acknowledged,
// and each is stored exactly once.
func TestNodeMoveIdempotentLibrdkafka(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3, proxies: true})
	c.proxies[2].pushDelay.Store(int64(20 * time.Millisecond))
	const parts, records = 6, 2000
	topic := uniq("move-rdk")
	c.createTopic(t, topic, parts)
	values := make([]string, records)
	for i := range values {
		values[i] = "mv-" + strconv.Itoa(i)
	}
	p := newRdkIdempotent(t, strings.Join(c.addrs(1, 2), ","))
	acked := produceRdkAll(t, p, topic, parts, values, func(i int) {
		if i == records/2+wave/2 { // half a wave in flight
			time.Sleep(10 * time.Millisecond)
			c.node(3).kill()
		}
	})
	if len(acked) != len(values) {
		t.Errorf("%d of %d records acknowledged", len(acked), len(values))
	}
	exactlyOnceStored(t, "across the node move", values, acked, storedAll(t, c.dev, topic, parts))
}
