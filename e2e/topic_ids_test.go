package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// Topic ids (issue 10): a topic's id is its Queen queue's id.

// TestTopicIDsSingle is testTopicIDs against one facade.
func TestTopicIDsSingle(t *testing.T) {
	dev, fac := sharedEnv(t)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	testTopicIDs(t, tg, fac.addr, fac.addr, fac.addr)
}

// TestClusterTopicIDs is testTopicIDs against three nodes: created at node
// 1, deleted by id at node 2, recreated at node 3, and every node asked.
func TestClusterTopicIDs(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	testTopicIDs(t, c.target(), c.node(1).addr, c.node(2).addr, c.node(3).addr)
}

// testTopicIDs deletes and recreates a topic under a franz-go consumer:
// CreateTopics answers the id every node's Metadata gives; DeleteTopics by
// that id deletes the topic, after which every node answers the id
// UNKNOWN_TOPIC_ID (Metadata by id, DeleteTopics by id); the recreated
// topic has a new id at every node; the live consumer sees the new id and,
// as franz-go does against Kafka, takes the topic as recreated; purged and
// re-added, it reads the new topic from offset 0 and nothing of the old.
func testTopicIDs(t *testing.T, tg target, createAt, deleteAt, recreateAt string) {
	topic := uniq("topic-ids")
	ctx := ctxT(t, 90*time.Second)
	created := createWithID(t, createAt, topic)
	for _, addr := range tg.bootstrap {
		if id := metadataID(t, addr, topic); id != created {
			t.Fatalf("Metadata at %s gives id %s, CreateTopics answered %s", addr, kadm.TopicID(id), kadm.TopicID(created))
		}
	}

	// Every node resolves the id, Metadata v12 and Produce v13 alike, the
	// nodes that did not create the topic included.
	for i, addr := range tg.bootstrap {
		r := metadataByID(t, addr, created)
		if r.ErrorCode != 0 || r.Topic == nil || *r.Topic != topic || len(r.Partitions) != 1 {
			t.Fatalf("Metadata v12 by id at %s: error %d name %v, %d partitions", addr, r.ErrorCode, r.Topic, len(r.Partitions))
		}
		if code := produceByID(t, addr, created, fmt.Sprintf("old-%d", i)); code != 0 {
			t.Fatalf("Produce v13 by id at %s: error %d", addr, code)
		}
	}

	var logs testsupport.LogBuffer
	cons := newKgo(t, tg.bootstrap, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.WithLogger(kgo.BasicLogger(&logs, kgo.LogLevelWarn, nil)))
	got := pollValues(t, ctx, cons, len(tg.bootstrap))
	for i, v := range got {
		if want := fmt.Sprintf("%d old-%d", i, i); v != want {
			t.Fatalf("record %d of the topic is %q, want %q (all: %q)", i, v, want, got)
		}
	}

	del := deleteByID(t, deleteAt, created)
	if del.ErrorCode != 0 || del.Topic == nil || *del.Topic != topic || del.TopicID != created {
		t.Fatalf("DeleteTopics v6 by id at %s: %+v", deleteAt, del)
	}
	for _, addr := range tg.bootstrap {
		r := metadataByID(t, addr, created)
		if r.ErrorCode != kerr.UnknownTopicID.Code || r.Topic != nil || r.TopicID != created {
			t.Fatalf("Metadata v12 by the deleted id at %s: error %d name %v id %s, want UNKNOWN_TOPIC_ID, null, the id", addr, r.ErrorCode, r.Topic, kadm.TopicID(r.TopicID))
		}
		if again := deleteByID(t, addr, created); again.ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("DeleteTopics by the deleted id at %s: error %d, want UNKNOWN_TOPIC_ID", addr, again.ErrorCode)
		}
		if code := produceByID(t, addr, created, "to a deleted id"); code != kerr.UnknownTopicID.Code {
			t.Fatalf("Produce v13 to the deleted id at %s: error %d, want UNKNOWN_TOPIC_ID", addr, code)
		}
	}

	recreated := createWithID(t, recreateAt, topic)
	if recreated == created {
		t.Fatalf("the recreated topic kept id %s", kadm.TopicID(created))
	}
	for _, addr := range tg.bootstrap {
		// The old id names nothing, and deleting by it leaves its
		// successor alone.
		if again := deleteByID(t, addr, created); again.ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("DeleteTopics by the old id at %s after the recreate: error %d, want UNKNOWN_TOPIC_ID", addr, again.ErrorCode)
		}
		if id := metadataID(t, addr, topic); id != recreated {
			t.Fatalf("Metadata at %s after the recreate gives id %s, want the new %s", addr, kadm.TopicID(id), kadm.TopicID(recreated))
		}
	}

	// The live consumer learns the new id at its next metadata refresh
	// and does what franz-go does against Kafka: it does not adopt it.
	const seen = "metadata has a new ID for a topic we already hold"
	eventually(t, 30*time.Second, "the consumer sees the recreated topic's new id", func() (bool, string) {
		cons.ForceMetadataRefresh()
		poll, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if fs := cons.PollFetches(poll); len(fs.Records()) > 0 {
			t.Fatalf("the consumer read %d records from a topic with no records", len(fs.Records()))
		}
		return strings.Contains(logs.String(), seen), "no such log line yet"
	})
	// franz-go logs ids in hex.
	if line := "old_id: " + hex.EncodeToString(created[:]) + ", new_id: " + hex.EncodeToString(recreated[:]); !strings.Contains(logs.String(), line) {
		t.Fatalf("the consumer's log does not name both ids %s and %s:\n%s", kadm.TopicID(created), kadm.TopicID(recreated), logs.String())
	}
	cons.PurgeTopicsFromClient(topic)
	cons.AddConsumeTopics(topic)
	produceRound(t, tg, topic, 1, 5, "new", 0)
	got = pollValues(t, ctx, cons, 5)
	for i, v := range got {
		if want := fmt.Sprintf("%d new-0-%d", i, i); v != want {
			t.Fatalf("record %d of the recreated topic is %q, want %q (all: %q)", i, v, want, got)
		}
	}
}

// createWithID creates topic (one partition) through addr and returns the
// id CreateTopics v7 answered.
func createWithID(t *testing.T, addr, topic string) [16]byte {
	t.Helper()
	res, err := newAdmin(t, []string{addr}).CreateTopic(ctxT(t, 15*time.Second), 1, 1, nil, topic)
	if err != nil || res.Err != nil {
		t.Fatalf("CreateTopics %s at %s: %v / %v", topic, addr, err, res.Err)
	}
	if res.ID == (kadm.TopicID{}) {
		t.Fatalf("CreateTopics %s at %s answered no topic id", topic, addr)
	}
	return res.ID
}

// metadataID is the id Metadata at addr gives topic.
func metadataID(t *testing.T, addr, topic string) [16]byte {
	t.Helper()
	resp := requestAt(t, addr, metadataReq(topic)).(*kmsg.MetadataResponse)
	if resp.Version < 10 || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("Metadata v%d at %s for %s: %+v", resp.Version, addr, topic, resp.Topics)
	}
	return resp.Topics[0].TopicID
}

// metadataByID asks addr for the topic with id (Metadata v12+, by id).
func metadataByID(t *testing.T, addr string, id [16]byte) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id}}
	resp := requestAt(t, addr, req).(*kmsg.MetadataResponse)
	if resp.Version < 12 || len(resp.Topics) != 1 {
		t.Fatalf("Metadata v%d by id at %s: %+v", resp.Version, addr, resp.Topics)
	}
	return resp.Topics[0]
}

// deleteByID deletes the topic with id through addr (DeleteTopics v6).
func deleteByID(t *testing.T, addr string, id [16]byte) kmsg.DeleteTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 15000
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: id}}
	resp := requestAt(t, addr, req).(*kmsg.DeleteTopicsResponse)
	if resp.Version < 6 || len(resp.Topics) != 1 {
		t.Fatalf("DeleteTopics v%d by id at %s: %+v", resp.Version, addr, resp.Topics)
	}
	return resp.Topics[0]
}

// produceByID writes one record to partition 0 of the topic with id
// through addr (Produce v13) and returns the partition's error code.
func produceByID(t *testing.T, addr string, id [16]byte, value string) int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = rawBatch(-1, -1, -1, value)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := requestAt(t, addr, req).(*kmsg.ProduceResponse)
	if resp.Version < 13 || len(resp.Topics) != 1 || resp.Topics[0].TopicID != id || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Produce v%d by id at %s: %+v", resp.Version, addr, resp.Topics)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// requestAt sends req to the node at addr and returns its answer.
func requestAt(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	raw, err := newKgo(t, []string{addr}).SeedBrokers()[0].Request(ctxT(t, 15*time.Second), req)
	if err != nil {
		t.Fatalf("%s at %s: %v", kmsg.NameForKey(req.Key()), addr, err)
	}
	return raw
}

// pollValues polls cons until it holds n records, each as "offset value".
func pollValues(t *testing.T, ctx context.Context, cons *kgo.Client, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d %s", r.Offset, r.Value)) })
	}
	return got
}

// TestClusterProduceAtEachVersion: a franz-go producer and consumer
// bootstrapped on three nodes, pinned through kversion at each Produce and
// Metadata version from v9 (names only) to v13 (topics by id), write six
// partitions led by all three nodes and read every record back once at its
// offset.
func TestClusterProduceAtEachVersion(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	const parts = 6
	for v := int16(9); v <= 13; v++ {
		topic := uniq(fmt.Sprintf("cluster-v%d", v))
		c.createTopic(t, topic, parts)
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(kmsg.Produce.Int16(), v)
		vs.SetMaxKeyVersion(kmsg.Metadata.Int16(), v)
		pin := kgo.MaxVersions(vs)
		rs := produceRound(t, c.target(), topic, parts, 2, fmt.Sprintf("v%d", v), 0, pin)
		offs := map[int32]kgo.Offset{}
		for p := int32(0); p < parts; p++ {
			offs[p] = kgo.NewOffset().AtStart()
		}
		cons := newKgo(t, c.addrs(), pin, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
		exactlyOnce(t, fmt.Sprintf("Produce and Metadata v%d through three nodes", v), rs, pollKgo(t, cons, len(rs), 20*time.Second))
		cons.Close()
	}
}
