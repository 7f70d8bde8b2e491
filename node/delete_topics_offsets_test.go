package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A topic deleted and created again is a new log starting at offset 0; a
// group that had committed on the old one must not resume the new one at
// its old positions (Kafka drops a deleted topic's offsets). Found with
// confluent-kafka-python: commit 5, delete, recreate, produce 20, and the
// group read from 5.
func TestDeleteTopicsRemovesCommittedOffsets(t *testing.T) {
	n, _ := newTestNode(t, nil)
	c := testConn(t, n)
	for _, name := range []string{"orders", "orders-archive"} {
		if rt := createTopics(t, n, c, 5, false, createSpec{name, 2, 1, nil}).Topics[0]; rt.ErrorCode != 0 {
			t.Fatalf("create %s: %d", name, rt.ErrorCode)
		}
	}
	commit := func(group, topic string, offset int64) {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 6, group, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = 1, offset
		rt.Partitions = append(rt.Partitions, p)
		req.Topics = append(req.Topics, rt)
		if code := call[*kmsg.OffsetCommitResponse](t, n, c, req).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("commit %s/%s: %d", group, topic, code)
		}
	}
	fetch := func(group, topic string) int64 {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 7, group
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{1}
		req.Topics = append(req.Topics, rt)
		resp := call[*kmsg.OffsetFetchResponse](t, n, c, req)
		if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("fetch %s/%s: %+v", group, topic, resp)
		}
		return resp.Topics[0].Partitions[0].Offset
	}
	commit("billing", "orders", 5)
	commit("audit", "orders", 7)
	commit("billing", "orders-archive", 3)

	if rt := deleteTopics(t, n, c, 5, "orders").Topics[0]; rt.ErrorCode != 0 {
		t.Fatalf("delete %d", rt.ErrorCode)
	}
	if rt := createTopics(t, n, c, 5, false, createSpec{"orders", 2, 1, nil}).Topics[0]; rt.ErrorCode != 0 {
		t.Fatalf("recreate %d", rt.ErrorCode)
	}
	for _, g := range []string{"billing", "audit"} {
		if off := fetch(g, "orders"); off != -1 {
			t.Fatalf("%s resumes the recreated topic at the deleted one's offset %d", g, off)
		}
	}
	if off := fetch("billing", "orders-archive"); off != 3 {
		t.Fatalf("another topic's offset went with it: %d", off)
	}
}
