package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/transport"
)

// A commit for a partition the node does not serve is refused
// UNKNOWN_TOPIC_OR_PARTITION and written nowhere, as Kafka refuses it; the
// rest of the request is committed and every partition is answered in
// request order. Found with confluent-kafka-python: a consumer's commit on
// revoke, just after DeleteTopics, wrote its old offset back, and the topic
// recreated under the name was resumed at it (ten records skipped).
func TestOffsetCommitRefusesPartitionsNotServed(t *testing.T) {
	n, _ := newTestNode(t, nil)
	c := testConn(t, n)
	if rt := createTopics(t, n, c, 5, false, createSpec{"orders", 2, 1, nil}).Topics[0]; rt.ErrorCode != 0 {
		t.Fatalf("create %d", rt.ErrorCode)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 6, "billing", -1
	for _, tp := range []struct {
		topic string
		parts []int32
	}{{"gone", []int32{0}}, {"orders", []int32{1, 2, 0}}, {"__consumer_offsets", []int32{0}}} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = tp.topic
		for _, p := range tp.parts {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 10+int64(p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := call[*kmsg.OffsetCommitResponse](t, n, c, req)
	type answer struct {
		topic string
		part  int32
		code  int16
	}
	var got []answer
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			got = append(got, answer{rt.Topic, rp.Partition, rp.ErrorCode})
		}
	}
	unknown := kerr.UnknownTopicOrPartition.Code
	want := []answer{{"gone", 0, unknown}, {"orders", 1, 0}, {"orders", 2, unknown}, {"orders", 0, 0}, {"__consumer_offsets", 0, unknown}}
	if len(got) != len(want) {
		t.Fatalf("answers %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("answers %+v, want %+v", got, want)
		}
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version, fetch.Group, fetch.Topics = 7, "billing", nil
	committed := map[answer]int64{}
	for _, rt := range call[*kmsg.OffsetFetchResponse](t, n, c, fetch).Topics {
		for _, rp := range rt.Partitions {
			committed[answer{rt.Topic, rp.Partition, 0}] = rp.Offset
		}
	}
	if len(committed) != 2 || committed[answer{"orders", 0, 0}] != 10 || committed[answer{"orders", 1, 0}] != 11 {
		t.Fatalf("stored offsets %v, want orders 0→10 and 1→11 only", committed)
	}
}

// commitOffsets commits offset 1 of each partition of topic for group and
// answers each partition's code.
func commitOffsets(t *testing.T, n *Node, c *transport.Conn, group, topic string, parts ...int32) []int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 6, group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	var codes []int16
	for _, rt := range call[*kmsg.OffsetCommitResponse](t, n, c, req).Topics {
		for _, rp := range rt.Partitions {
			codes = append(codes, rp.ErrorCode)
		}
	}
	return codes
}

// A commit to a topic created natively in Queen (or through another
// facade) after this node's catalogue was loaded is accepted at once: the
// miss refreshes the catalogue before refusing, where it was refused
// UNKNOWN_TOPIC_OR_PARTITION until the TTL ran out (issue 20 item 6). A
// client hammering a topic that does not exist costs Queen at most one
// listing per catalogue.MissRefreshFloor, never one per commit.
func TestOffsetCommitToTopicCreatedElsewhere(t *testing.T) {
	n, dq := newTestNode(t, nil)
	clk := withClock(n)
	c := testConn(t, n)
	metadata(t, n, c, 9, false) // the catalogue is loaded
	dq.addQueue("native", 2)
	if got := commitOffsets(t, n, c, "billing", "native", 0, 1); len(got) != 2 || got[0] != 0 || got[1] != 0 {
		t.Fatalf("commit to a topic created natively since the last listing: codes %v, want [0 0]", got)
	}

	const listing = "GET /api/v1/resources/queues"
	before := dq.count(listing)
	for range 20 {
		clk.Advance(catalogue.MissRefreshFloor / 10)
		got := commitOffsets(t, n, c, "billing", "nowhere", 0, 1, 2)
		for _, code := range got {
			if code != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("commit to an absent topic: codes %v", got)
			}
		}
	}
	if got := dq.count(listing) - before; got < 1 || got > 3 {
		t.Fatalf("%d listings for 20 commits to an absent topic over two refresh floors, want 1 to 3", got)
	}
}
