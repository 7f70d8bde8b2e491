package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestRdkafkaConsumerProtocol (issue 21): librdkafka's KIP-848 consumer
// (group.protocol=consumer) through confluent-kafka-go against one
// facade. The newest confluent-kafka-go the module proxy serves here is
// v2.11.1 (librdkafka 2.11.1, KIP-848 in preview; it became generally
// available in librdkafka 2.12, which is not served); e2e requires v2.6.1,
// whose librdkafka 2.6.1 has KIP-848 in early access and sends
// ConsumerGroupHeartbeat v0. Two members of one group share 6 partitions
// (disjoint and covering; ConsumerGroupDescribe lists both as
// consumer-protocol members); the records produced then are each read
// once, every partition by one member only, and committed: the committed
// offsets are the end offsets.
func TestRdkafkaConsumerProtocol(t *testing.T) {
	t.Parallel()
	const (
		parts = 6
		per   = 50
	)
	dev := startQueenDev(t, devOptions{})
	fac := startFacade(t, dev, consumerGroupEnv)
	seeds := []string{fac.addr}
	topic, group := uniq("rdk848"), uniq("rdk848-group")
	createTopic(t, target{bootstrap: seeds}, topic, parts, nil)
	require848(t, seeds)
	_, version := kafka.LibraryVersion()
	t.Logf("librdkafka %s", version)

	var (
		mu   sync.Mutex
		got  []rec
		seen = map[int32]string{} // partition → the member that read it
	)
	type rdMember struct {
		c    *kafka.Consumer
		stop chan struct{}
		done chan struct{}
	}
	start := func(name string) *rdMember {
		logs := make(chan kafka.LogEvent, 1000)
		c, err := kafka.NewConsumer(&kafka.ConfigMap{
			"bootstrap.servers": strings.Join(seeds, ","), "group.id": group, "group.protocol": "consumer",
			"client.id": name, "enable.auto.commit": false, "auto.offset.reset": "earliest",
			"go.logs.channel.enable": true, "go.logs.channel": logs, "debug": "cgrp",
		})
		if err != nil {
			t.Fatalf("librdkafka consumer %s with group.protocol=consumer: %v", name, err)
		}
		rdkafkaLogs(t, name, logs)
		if err := c.SubscribeTopics([]string{topic}, nil); err != nil {
			t.Fatalf("%s subscribe: %v", name, err)
		}
		m := &rdMember{c: c, stop: make(chan struct{}), done: make(chan struct{})}
		go func() {
			defer close(m.done)
			for {
				if closed(m.stop) {
					return
				}
				switch e := c.Poll(100).(type) {
				case *kafka.Message:
					p := e.TopicPartition.Partition
					mu.Lock()
					got = append(got, rec{partition: p, offset: int64(e.TopicPartition.Offset), key: e.Key, value: e.Value})
					if other, ok := seen[p]; ok && other != name {
						t.Errorf("partition %d read by %s and by %s", p, other, name)
					}
					seen[p] = name
					mu.Unlock()
					if _, err := c.CommitMessage(e); err != nil {
						t.Errorf("%s commit %d@%d: %v", name, p, e.TopicPartition.Offset, err)
					}
				case kafka.Error:
					t.Errorf("%s: %v", name, e)
				}
			}
		}()
		t.Cleanup(func() {
			select {
			case <-m.stop:
			default:
				close(m.stop)
				<-m.done
				// librdkafka's Close leaves the group; bounded, so a leave
				// that is never answered fails the test instead of hanging it.
				closed := make(chan error, 1)
				go func() { closed <- c.Close() }()
				select {
				case err := <-closed:
					if err != nil {
						t.Errorf("%s close: %v", name, err)
					}
				case <-time.After(30 * time.Second):
					t.Errorf("%s: librdkafka's Close did not return within 30 s", name)
				}
			}
		})
		return m
	}
	a := start("rdk-a")
	b := start("rdk-b")
	eventually(t, 60*time.Second, "both librdkafka members assigned", func() (bool, string) {
		pa, err1 := a.c.Assignment()
		pb, err2 := b.c.Assignment()
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		cover := map[int32]bool{}
		for _, tp := range append(pa, pb...) {
			cover[tp.Partition] = true
		}
		return len(pa) > 0 && len(pb) > 0 && len(pa)+len(pb) == parts && len(cover) == parts, fmt.Sprintf("%v and %v", pa, pb)
	})
	// Produced once the two share the topic, so each partition's records
	// are read by its one owner.
	want := produceRound(t, target{bootstrap: seeds}, topic, parts, per, "rdk848", 0)
	dg := describe848(t, seeds, group)
	if len(dg.Members) != 2 {
		t.Errorf("ConsumerGroupDescribe: %d members, want 2", len(dg.Members))
	}
	for _, m := range dg.Members {
		if m.MemberType != 1 {
			t.Errorf("member %s (%s) has member type %d, want 1 (consumer protocol)", m.MemberID, m.ClientID, m.MemberType)
		}
	}
	eventually(t, 60*time.Second, "every record read", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(want), fmt.Sprintf("%d of %d", len(got), len(want))
	})
	waitCommitted(t, target{bootstrap: seeds}, group, topic, fill(parts, per), 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	exactlyOnce(t, "librdkafka group.protocol=consumer", want, got)
}
