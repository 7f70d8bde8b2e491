package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
