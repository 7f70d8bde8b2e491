package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Regressions found by hands-on QA with clients the rest of the suite does
// not drive (confluent-kafka-python, kafkajs), reproduced here with the
// suite's own clients.

// TestQADeletedTopicLeavesNoCommittedOffsets: a group commits on a topic,
// the topic is deleted and created again under its name (a new queue whose
// partitions restart at offset 0), and the group's next consumer must read
// the new topic from the start. Before the fix the old committed offset
// survived the delete and kcat resumed at it, silently skipping the new
// topic's first records (found with confluent-kafka-python); and a live
// consumer's commit on revoke, landing just after the delete, wrote the old
// position back.
func TestQADeletedTopicLeavesNoCommittedOffsets(t *testing.T) {
	dev, fac := sharedEnv(t)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	topic, group := uniq("qa-recreate"), uniq("g-qa-recreate")
	createTopic(t, tg, topic, 1, nil)
	produceRound(t, tg, topic, 1, 3, "old", 0)
	consume := func(want int) []string {
		t.Helper()
		k := startKcat(t, "-b", fac.addr, "-G", group, "-X", "auto.offset.reset=earliest", "-q", "-u", "-f", "%o %s\n", topic)
		k.waitLines(t, want, 30*time.Second)
		time.Sleep(300 * time.Millisecond) // room for a wrong extra record to show
		k.interrupt()
		return k.lines()
	}
	if got := consume(3); len(got) != 3 {
		t.Fatalf("first consumer read %q, want the 3 old records", got)
	}
	assertCommitted(t, tg, group, topic, map[int32]int64{0: 3})

	res, err := newAdmin(t, tg.bootstrap).DeleteTopics(ctxT(t, 15*time.Second), topic)
	if err != nil || res[topic].Err != nil {
		t.Fatalf("delete %s: %v %v", topic, err, res[topic].Err)
	}
	assertCommitted(t, tg, group, topic, map[int32]int64{})
	// A consumer committing on revoke just after the delete must not write
	// the old position back (Kafka refuses a commit for a partition it does
	// not host).
	var late kadm.Offsets
	late.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3, LeaderEpoch: -1})
	cr, err := newAdmin(t, tg.bootstrap).CommitOffsets(ctxT(t, 15*time.Second), group, late)
	if err != nil {
		t.Fatalf("late commit: %v", err)
	}
	if r, _ := cr.Lookup(topic, 0); !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("late commit on the deleted topic answered %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
	}
	assertCommitted(t, tg, group, topic, map[int32]int64{})

	createTopic(t, tg, topic, 1, nil)
	produceRound(t, tg, topic, 1, 5, "new", 0)
	got := consume(5)
	if len(got) != 5 || !strings.HasPrefix(got[0], "0 new-0-0") {
		t.Fatalf("the group read %q from the recreated topic, want all 5 new records from offset 0", got)
	}
}
