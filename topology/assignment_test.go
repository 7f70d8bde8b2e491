package topology

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// assigned is one CreateTopics topic with a manual replica assignment
// (replicas[i] is partition parts[i]'s list), checked against brokers.
type assigned struct {
	width int32
	rf    int16
	code  int16
	msg   string
}

func assign(brokers []int32, partitions int32, rf int16, parts []int32, replicas ...[]int32) assigned {
	tp := kmsg.NewCreateTopicsRequestTopic()
	tp.NumPartitions, tp.ReplicationFactor = partitions, rf
	for i, p := range parts {
		tp.ReplicaAssignment = append(tp.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: p, Replicas: replicas[i]})
	}
	var bs []kmsg.MetadataResponseBroker
	for _, id := range brokers {
		bs = append(bs, kmsg.MetadataResponseBroker{NodeID: id})
	}
	var a assigned
	a.width, a.rf, a.code, a.msg = ManualAssignment(tp, bs)
	return a
}

// TestManualAssignment: an assignment naming only registered brokers (node
// 0, as single mode lists it) is accepted as Kafka's controller accepts it,
// its partition count the topic's width; a malformed one is refused with
// the code and sentence of Kafka's ReplicationControlManager. (What an
// accepted one creates is node's TestCreateTopicsManualAssignment.)
func TestManualAssignment(t *testing.T) {
	single := []int32{0}
	a := assign(single, -1, -1, []int32{2, 0, 1}, []int32{0}, []int32{0}, []int32{0})
	if a.code != 0 || a.msg != "" || a.width != 3 || a.rf != 1 {
		t.Fatalf("valid assignment: %+v", a)
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
		a := assign(single, tc.partitions, tc.rf, tc.parts, tc.replicas...)
		if a.code != tc.code || a.msg != tc.msg {
			t.Errorf("%s: %+v, want %d %q", tc.name, a, tc.code, tc.msg)
		}
	}
}

// TestManualAssignmentCluster: in cluster mode the registered brokers are
// the live set's ids, and the replica count must agree across partitions.
func TestManualAssignmentCluster(t *testing.T) {
	live := []int32{1, 2}
	a := assign(live, -1, -1, []int32{0, 1}, []int32{1, 2}, []int32{2, 1})
	if a.code != 0 || a.width != 2 || a.rf != 2 {
		t.Fatalf("valid assignment: %+v", a)
	}
	for name, tc := range map[string]struct {
		replicas [][]int32
		msg      string
	}{
		"uneven":  {[][]int32{{1, 2}, {1}}, "The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."},
		"absent0": {[][]int32{{0}, {1}}, "The manual partition assignment includes broker 0, but no such broker is registered."},
	} {
		a := assign(live, -1, -1, []int32{0, 1}, tc.replicas...)
		if a.code != kerr.InvalidReplicaAssignment.Code || a.msg != tc.msg {
			t.Errorf("%s: %+v", name, a)
		}
	}
}

// TestManualPartitions: a CreatePartitions assignment is checked as Kafka's
// controller checks it (ReplicationControlManager.createPartitions): one
// replica list per added partition, each naming registered brokers once, as
// many as the partitions before have; a valid one is accepted.
func TestManualPartitions(t *testing.T) {
	lists := func(replicas ...[]int32) []kmsg.CreatePartitionsRequestTopicAssignment {
		var out []kmsg.CreatePartitionsRequestTopicAssignment
		for _, r := range replicas {
			out = append(out, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: r})
		}
		return out
	}
	brokers := func(ids ...int32) []kmsg.MetadataResponseBroker {
		var out []kmsg.MetadataResponseBroker
		for _, id := range ids {
			out = append(out, kmsg.MetadataResponseBroker{NodeID: id})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		lists   []kmsg.CreatePartitionsRequestTopicAssignment
		added   int32
		brokers []kmsg.MetadataResponseBroker
		factor  int
		code    int16
		msg     string
	}{
		{"single", lists([]int32{0}), 1, brokers(0), 1, 0, ""},
		{"cluster", lists([]int32{2, 1}, []int32{1, 2}), 2, brokers(1, 2), 2, 0, ""},
		{"too-few", lists([]int32{0}), 2, brokers(0), 1, kerr.InvalidReplicaAssignment.Code,
			"Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{"too-many", lists([]int32{0}, []int32{0}), 1, brokers(0), 1, kerr.InvalidReplicaAssignment.Code,
			"Attempted to add 1 additional partition(s), but only 2 assignment(s) were specified."},
		{"unknown-broker", lists([]int32{1}), 1, brokers(0), 1, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes broker 1, but no such broker is registered."},
		{"empty", lists([]int32{}), 1, brokers(0), 1, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes an empty replica list."},
		{"repeated", lists([]int32{1, 1}), 1, brokers(1, 2), 2, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes the broker 1 more than once."},
		{"factor", lists([]int32{1}), 1, brokers(1, 2), 2, kerr.InvalidReplicaAssignment.Code,
			"The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."},
	} {
		code, msg := ManualPartitions(tc.lists, tc.added, tc.brokers, tc.factor)
		if code != tc.code || msg != tc.msg {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, msg, tc.code, tc.msg)
		}
	}
}
