package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
)

// TestShareFetchLimitsAndDisconnect: max_records bounds an acquisition and
// batch_size cuts its AcquiredRecords; a member whose connection closes
// loses its session and what it held is released (as Kafka evicts the
// session of a closed connection), delivered to another with its count.
func TestShareFetchLimitsAndDisconnect(t *testing.T) {
	_, addr, _ := servedEnv(t, dev.Options{})
	id := shareTopic(t, addr, "sf-limits")
	a := &shareMember{k: dial(t, addr), group: "sl", id: "a", topic: id}
	b := &shareMember{k: dial(t, addr), group: "sl", id: "b", topic: id}
	a.next(t)
	b.next(t)
	produceShare(t, addr, "sf-limits", 10)

	r := kmsg.NewPtrShareFetchRequest()
	r.Version, r.GroupID, r.MemberID, r.ShareSessionEpoch = 2, kmsg.StringPtr("sl"), kmsg.StringPtr("a"), a.epoch
	r.MaxRecords, r.BatchSize, r.ShareAcquireMode = 5, 2, 1
	r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
	resp := a.k.roundTrip(r).(*kmsg.ShareFetchResponse)
	require.Zero(t, resp.ErrorCode)
	require.Equal(t, []ack{{0, 1, 1}, {2, 3, 1}, {4, 4, 1}}, acquired(&resp.Topics[0].Partitions[0]))
	require.Equal(t, []ack{{5, 9, 1}}, acquired(b.next(t)))

	require.NoError(t, a.k.nc.Close())
	var got []ack
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		got = acquired(b.next(t))
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, []ack{{0, 4, 2}}, got, "released when its connection closed, long before its lock ends")
}
