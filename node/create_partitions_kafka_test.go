package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreatePartitionsAbsentTopicHasNullMessage: Kafka's controller answers
// a topic it does not have UNKNOWN_TOPIC_OR_PARTITION from a message-less
// exception, so the message is null; a topic named twice is Kafka's
// "Duplicate topic name.".
func TestCreatePartitionsAbsentTopicHasNullMessage(t *testing.T) {
	n, _ := newTestNode(t, nil)
	c := testConn(t, n)
	for _, name := range []string{"missing", "__consumer_offsets", "bad/name"} {
		if rt := createPartitions(t, n, c, name, 9, false); rt.ErrorCode != kerr.UnknownTopicOrPartition.Code || rt.ErrorMessage != nil {
			t.Errorf("%s: %d %v", name, rt.ErrorCode, rt.ErrorMessage)
		}
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	for range 2 {
		tp := kmsg.NewCreatePartitionsRequestTopic()
		tp.Topic, tp.Count = "twice", 4
		req.Topics = append(req.Topics, tp)
	}
	for _, rt := range call[*kmsg.CreatePartitionsResponse](t, n, c, req).Topics {
		if rt.ErrorCode != kerr.InvalidRequest.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != "Duplicate topic name." {
			t.Errorf("twice: %d %v", rt.ErrorCode, rt.ErrorMessage)
		}
	}
}
