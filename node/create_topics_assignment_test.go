package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// createAssigned sends CreateTopics v5 for one topic with a manual replica
// assignment (replicas[i] is partition parts[i]'s list).
func createAssigned(t *testing.T, n *Node, c *transport.Conn, topic string, partitions int32, rf int16, parts []int32, replicas ...[]int32) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 5
	tp := kmsg.NewCreateTopicsRequestTopic()
	tp.Topic, tp.NumPartitions, tp.ReplicationFactor = topic, partitions, rf
	for i, p := range parts {
		tp.ReplicaAssignment = append(tp.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: replicas[i]})
	}
	req.Topics = append(req.Topics, tp)
	return call[*kmsg.CreateTopicsResponse](t, n, c, req).Topics[0]
}

// TestCreateTopicsManualAssignment: an assignment naming only brokers
// Metadata lists is accepted as Kafka's controller accepts it, its
// partition count the topic's width; a malformed one is refused with the
// code and sentence of Kafka's ReplicationControlManager.
func TestCreateTopicsManualAssignment(t *testing.T) {
	n, dq := newTestNode(t, nil)
	c := testConn(t, n)

	rt := createAssigned(t, n, c, "assigned", -1, -1, []int32{2, 0, 1}, []int32{0}, []int32{0}, []int32{0})
	if rt.ErrorCode != 0 || rt.ErrorMessage != nil || rt.NumPartitions != 3 || rt.ReplicationFactor != 1 {
		t.Fatalf("valid assignment: %d %v width %d factor %d", rt.ErrorCode, rt.ErrorMessage, rt.NumPartitions, rt.ReplicationFactor)
	}
	if dq.queue("assigned") == nil {
		t.Fatal("no queue created")
	}
	if rec := dq.record("assigned"); rec == nil || rec.Partitions != 3 {
		t.Fatalf("width not recorded: %+v", rec)
	}
	if got := len(metadata(t, n, c, 9, false, "assigned").Topics[0].Partitions); got != 3 {
		t.Fatalf("Metadata width %d", got)
	}

	for _, tc := range []struct {
		name       string
		partitions int32
		rf         int16
		parts      []int32
		replicas   [][]int32
		code       int16
		msg        string
	}{
		{"factor-set", -1, 1, []int32{0}, [][]int32{{0}}, kerr.InvalidRequest.Code,
			"A manual partition assignment was specified, but replication factor was not set to -1."},
		{"count-set", 1, -1, []int32{0}, [][]int32{{0}}, kerr.InvalidRequest.Code,
			"A manual partition assignment was specified, but numPartitions was not set to -1."},
		{"twice", -1, -1, []int32{0, 0}, [][]int32{{0}, {0}}, kerr.InvalidReplicaAssignment.Code,
			"Found multiple manual partition assignments for partition 0"},
		{"empty", -1, -1, []int32{0}, [][]int32{{}}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes an empty replica list."},
		{"unknown-broker", -1, -1, []int32{0}, [][]int32{{7, 0}}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes broker 7, but no such broker is registered."},
		{"repeated-broker", -1, -1, []int32{0}, [][]int32{{0, 0}}, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes the broker 0 more than once."},
		{"gap", -1, -1, []int32{0, 2}, [][]int32{{0}, {0}}, kerr.InvalidReplicaAssignment.Code,
			"partitions should be a consecutive 0-based integer sequence"},
		{"negative", -1, -1, []int32{-1}, [][]int32{{0}}, kerr.InvalidReplicaAssignment.Code,
			"partitions should be a consecutive 0-based integer sequence"},
	} {
		rt := createAssigned(t, n, c, "bad-"+tc.name, tc.partitions, tc.rf, tc.parts, tc.replicas...)
		if rt.ErrorCode != tc.code || rt.ErrorMessage == nil || *rt.ErrorMessage != tc.msg {
			t.Errorf("%s: %d %v, want %d %q", tc.name, rt.ErrorCode, rt.ErrorMessage, tc.code, tc.msg)
		}
		if dq.queue("bad-"+tc.name) != nil {
			t.Errorf("%s: created", tc.name)
		}
	}
}

// TestCreateTopicsManualAssignmentCluster: in cluster mode the registered
// brokers are the live set's ids, and the replica count must agree across
// partitions.
func TestCreateTopicsManualAssignmentCluster(t *testing.T) {
	fq, url := newDevQueen(t)
	n1 := joinedNode(t, url, 1)
	n2 := joinedNode(t, url, 2)
	waitView(t, []int32{1, 2}, n1, n2)
	c := testConn(t, n1)

	rt := createAssigned(t, n1, c, "spread", -1, -1, []int32{0, 1}, []int32{1, 2}, []int32{2, 1})
	if rt.ErrorCode != 0 || rt.NumPartitions != 2 || rt.ReplicationFactor != 2 {
		t.Fatalf("valid assignment: %d %v width %d factor %d", rt.ErrorCode, rt.ErrorMessage, rt.NumPartitions, rt.ReplicationFactor)
	}
	if fq.queue("spread") == nil {
		t.Fatal("no queue created")
	}
	for name, tc := range map[string]struct {
		replicas [][]int32
		msg      string
	}{
		"uneven":  {[][]int32{{1, 2}, {1}}, "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."},
		"absent0": {[][]int32{{0}, {1}}, "The manual partition assignment includes broker 0, but no such broker is registered."},
	} {
		rt := createAssigned(t, n1, c, "bad-"+name, -1, -1, []int32{0, 1}, tc.replicas...)
		if rt.ErrorCode != kerr.InvalidReplicaAssignment.Code || rt.ErrorMessage == nil || *rt.ErrorMessage != tc.msg {
			t.Errorf("%s: %d %v", name, rt.ErrorCode, rt.ErrorMessage)
		}
	}
}
