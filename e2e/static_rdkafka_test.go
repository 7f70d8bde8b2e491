package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"
)

// rdStatic is a librdkafka static member (group.instance.id) polled in the
// background, its rebalance events counted.
type rdStatic struct {
	c    *kafka.Consumer
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	assigned []int32
	assigns  int
	revokes  int
	fenced   bool
}

func startRdStatic(t *testing.T, tg target, group, topic, instance string) *rdStatic {
	t.Helper()
	logs := make(chan kafka.LogEvent, 1000)
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": strings.Join(tg.bootstrap, ","), "group.id": group, "group.instance.id": instance,
		"partition.assignment.strategy": "range", "enable.auto.commit": false, "auto.offset.reset": "earliest",
		"session.timeout.ms": 30000, "heartbeat.interval.ms": 500,
		"go.logs.channel.enable": true, "go.logs.channel": logs,
	})
	require.NoError(t, err)
	rdkafkaLogs(t, instance, logs)
	s := &rdStatic{c: c, stop: make(chan struct{}), done: make(chan struct{})}
	require.NoError(t, c.SubscribeTopics([]string{topic}, func(c *kafka.Consumer, e kafka.Event) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch e := e.(type) {
		case kafka.AssignedPartitions:
			s.assigned = nil
			for _, tp := range e.Partitions {
				s.assigned = append(s.assigned, tp.Partition)
			}
			slices.Sort(s.assigned)
			s.assigns++
		case kafka.RevokedPartitions:
			s.assigned = nil
			s.revokes++
		}
		return nil
	}))
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			if ke, ok := s.c.Poll(100).(kafka.Error); ok && ke.Code() == kafka.ErrFencedInstanceID {
				s.mu.Lock()
				s.fenced = true
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(s.close)
	return s
}

// close stops polling and closes the consumer, which as a static member
// sends no LeaveGroup.
func (s *rdStatic) close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	<-s.done
	_ = s.c.Close()
}

// abandon stops polling a consumer that hit a fatal error, without Close:
// confluent-kafka-go 2.6.1's Close never returns for a fatally-errored
// consumer (confluentinc/confluent-kafka-go#1588, fixed after 2.6.1), so
// its handle is left to the end of the test process.
func (s *rdStatic) abandon() {
	close(s.stop)
	<-s.done
}

func (s *rdStatic) state() (parts []int32, assigns, revokes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.assigned), s.assigns, s.revokes
}

// testGroupStaticLibrdkafka: three librdkafka static members
// (group.instance.id, range assignor); a rolling restart of all three, each
// consumer closed (no LeaveGroup) and replaced by a new one with the same
// instance id, hands every restarted member its old partitions while the
// others see no revocation and no new assignment: no rebalance. A
// duplicate instance id then fences the running member.
func testGroupStaticLibrdkafka(t *testing.T, tg target) {
	const parts = 6
	topic, group := uniq("grp-static-rd"), uniq("g-static-rd")
	createTopic(t, tg, topic, parts, nil)
	members := map[string]*rdStatic{}
	for _, in := range []string{"r1", "r2", "r3"} {
		members[in] = startRdStatic(t, tg, group, topic, in)
	}
	// Formed: disjoint assignments covering every partition, and the
	// coordinator reports the group Stable with three members.
	waitStable(t, tg, group, topic, 3, parts)
	eventually(t, 60*time.Second, "librdkafka members assigned", func() (bool, string) {
		seen := map[int32]bool{}
		for _, m := range members {
			ps, _, _ := m.state()
			for _, p := range ps {
				seen[p] = true
			}
		}
		return len(seen) == parts, fmt.Sprint(len(seen), " partitions assigned")
	})
	for _, in := range []string{"r1", "r2", "r3"} {
		before := map[string][2]int{}
		for other, m := range members {
			_, a, r := m.state()
			before[other] = [2]int{a, r}
		}
		old, _, _ := members[in].state()
		members[in].close()
		nm := startRdStatic(t, tg, group, topic, in)
		members[in] = nm
		eventually(t, 30*time.Second, "restarted "+in+" handed its partitions", func() (bool, string) {
			ps, _, _ := nm.state()
			return slices.Equal(ps, old), fmt.Sprint(ps, " want ", old)
		})
		for other, m := range members {
			if other == in {
				continue
			}
			_, a, r := m.state()
			require.Equal(t, before[other], [2]int{a, r}, "%s must see no rebalance when %s restarts", other, in)
		}
	}
	waitStable(t, tg, group, topic, 3, parts)

	// A second live r1 fences the running one: librdkafka raises
	// FENCED_INSTANCE_ID, a fatal error for that consumer.
	running := members["r1"]
	held, _, _ := running.state()
	dup := startRdStatic(t, tg, group, topic, "r1")
	eventually(t, 30*time.Second, "the replaced r1 is FENCED_INSTANCE_ID", func() (bool, string) {
		running.mu.Lock()
		defer running.mu.Unlock()
		return running.fenced, ""
	})
	running.abandon()
	eventually(t, 30*time.Second, "the duplicate r1 holds the partitions", func() (bool, string) {
		ps, _, _ := dup.state()
		return slices.Equal(ps, held), fmt.Sprint(ps, " want ", held)
	})
}
