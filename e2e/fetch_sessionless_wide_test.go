package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

// TestFetchWideLibrdkafka: librdkafka fetches without KIP-227 sessions
// (epoch -1, every partition in every fetch). Assigned 2,000 partitions of
// one facade, it is watched through its connection: the facade keeps the
// partitions parked at Queen between its fetches (queen_kafka_fetch_parked_reads
// above 0, no fetch session opened), and a trickle written straight to
// Queen reaches it exactly once.
func TestFetchWideLibrdkafka(t *testing.T) {
	t.Parallel()
	const parts, total = 2000, 40
	dev := startQueenDev(t, devOptions{})
	ops := "127.0.0.1:" + strconv.Itoa(freePort(t))
	fac := startFacade(t, dev, map[string]string{"LOG_LEVEL": "warn", "QUEEN_KAFKA_HTTP_ADDR": ops, "QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(parts)})
	q, err := queen.New(queen.Config{URL: dev.url})
	if err != nil {
		t.Fatal(err)
	}
	topic := uniq("rdk-wide")
	if _, err := q.Configure(ctxT(t, 10*time.Second), topic, nil); err != nil {
		t.Fatal(err)
	}

	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": fac.addr, "group.id": uniq("rdk-wide"), "enable.auto.commit": false,
		"fetch.wait.max.ms": 500, "go.logs.channel.enable": true,
	})
	if err != nil {
		t.Fatal(err)
	}
	rdkafkaLogs(t, "consumer", c.Logs())
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := int32(0); p < parts; p++ {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: 0})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	poll := func(d time.Duration) {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			m, err := c.ReadMessage(100 * time.Millisecond)
			if err != nil {
				if e, ok := err.(kafka.Error); ok && e.IsTimeout() {
					continue
				}
				t.Fatalf("librdkafka read: %v", err)
			}
			got[fmt.Sprintf("%d@%d=%s", m.TopicPartition.Partition, m.TopicPartition.Offset, m.Value)]++
		}
	}
	eventually(t, 60*time.Second, "librdkafka's partitions parked at Queen", func() (bool, string) {
		poll(200 * time.Millisecond)
		s := scrape(t, "http://"+ops)
		parked := metric(t, s, "queen_kafka_fetch_parked_reads")
		sessionless := metric(t, s, "queen_kafka_fetch_session_fetches_total", "kind", "sessionless")
		return parked > 0 && sessionless > 0, fmt.Sprintf("%v parked, %v sessionless fetches", parked, sessionless)
	})
	if n := metric(t, scrape(t, "http://"+ops), "queen_kafka_fetch_sessions"); n != 0 {
		t.Fatalf("%v fetch sessions: librdkafka was expected to fetch without", n)
	}

	want := map[string]int{}
	ctx := context.Background()
	for i := 0; i < total; i++ {
		p := (i * 97) % parts
		v := "trickle-" + strconv.Itoa(i)
		if _, err := q.Push(ctx, []queen.PushItem{{Queue: topic, Partition: strconv.Itoa(p), Payload: envelope.Append(nil, &envelope.Record{Value: []byte(v), Timestamp: -1})}}); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprintf("%d@0=%s", p, v)] = 1
		time.Sleep(10 * time.Millisecond)
	}
	eventually(t, 60*time.Second, "every record consumed", func() (bool, string) {
		poll(200 * time.Millisecond)
		return len(got) >= total, fmt.Sprintf("%d of %d", len(got), total)
	})
	poll(500 * time.Millisecond) // a duplicate arriving late is caught below
	for k, n := range got {
		if want[k] != n {
			t.Fatalf("%s consumed %d times, want %d (got %v)", k, n, want[k], got)
		}
	}
}
