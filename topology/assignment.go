package topology

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ManualAssignment checks a CreateTopics manual replica assignment as
// Kafka's controller does (ReplicationControlManager.createTopic and
// validateManualPartitionAssignment), in its order and with its codes and
// sentences, and answers the topic's width and replication factor. The
// registered brokers are the ones Metadata lists (a Layout's Brokers): node
// 0 in single mode, the live set in cluster mode. An accepted assignment
// places nothing: leaders stay the ones Metadata names, as for every topic,
// so what it decides here is the width (its partition count) and the
// factor reported; the facade's ceiling on a width is the caller's.
func ManualAssignment(t kmsg.CreateTopicsRequestTopic, brokers []kmsg.MetadataResponseBroker) (width int32, rf int16, code int16, msg string) {
	if t.ReplicationFactor != -1 {
		return 0, 0, kerr.InvalidRequest.Code, "A manual partition assignment was specified, but replication factor was not set to -1."
	}
	if t.NumPartitions != -1 {
		return 0, 0, kerr.InvalidRequest.Code, "A manual partition assignment was specified, but numPartitions was not set to -1."
	}
	var registered []int32
	for _, b := range brokers {
		registered = append(registered, b.NodeID)
	}
	seen := make(map[int32]bool, len(t.ReplicaAssignment))
	factor := -1 // the replica count of the partitions before, once there is one
	for _, a := range t.ReplicaAssignment {
		if seen[a.Partition] {
			return 0, 0, kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Found multiple manual partition assignments for partition %d", a.Partition)
		}
		seen[a.Partition] = true
		if msg := manualReplicasError(a.Replicas, registered, factor); msg != "" {
			return 0, 0, kerr.InvalidReplicaAssignment.Code, msg
		}
		factor = len(a.Replicas)
	}
	for p := range int32(len(seen)) {
		if !seen[p] {
			return 0, 0, kerr.InvalidReplicaAssignment.Code, "partitions should be a consecutive 0-based integer sequence"
		}
	}
	return int32(len(seen)), int16(factor), 0, ""
}

// ManualPartitions checks a CreatePartitions manual assignment as Kafka's
// controller does (ReplicationControlManager.createPartitions): one replica
// list per partition added, then each list as validateManualPartitionAssignment
// checks it, against the registered brokers (as for ManualAssignment) and the
// replica count of the partitions before (factor: what Metadata lists as a
// partition's replicas). It answers 0 and "" for an assignment Kafka accepts;
// like ManualAssignment's, an accepted one places nothing.
func ManualPartitions(assignments []kmsg.CreatePartitionsRequestTopicAssignment, added int32, brokers []kmsg.MetadataResponseBroker, factor int) (code int16, msg string) {
	if int32(len(assignments)) != added {
		return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", added, len(assignments))
	}
	var registered []int32
	for _, b := range brokers {
		registered = append(registered, b.NodeID)
	}
	for _, a := range assignments {
		if msg := manualReplicasError(a.Replicas, registered, factor); msg != "" {
			return kerr.InvalidReplicaAssignment.Code, msg
		}
	}
	return 0, ""
}

// manualReplicasError is Kafka's validateManualPartitionAssignment on one
// replica list ("" when it passes): not empty, every broker registered and
// named once, checked in ascending id order so the sentence names the least
// offender, and as many replicas as the partitions before (factor, -1 for
// the first).
func manualReplicasError(replicas, registered []int32, factor int) string {
	if len(replicas) == 0 {
		return "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if !slices.Contains(registered, id) {
			return fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if factor >= 0 && len(sorted) != factor {
		return fmt.Sprintf("The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(sorted), factor)
	}
	return ""
}
