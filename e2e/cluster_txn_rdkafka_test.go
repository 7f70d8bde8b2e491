package e2e

import "testing"

// The librdkafka consume-transform-produce loop (confluent-kafka-go) under
// the other two faults of issue 9's transaction tests, as franz-go's
// GroupTransactSession runs under them in cluster_txn_test.go: the copy
// completes exactly once, committed offsets never go backwards, and the
// producer meets no fatal error.

// TestClusterTxnLibrdkafkaPartitionLeaderKilled: the node that is neither
// the transaction coordinator nor the loop's bootstrap node, a leader of
// partitions of both topics, is SIGKILLed mid-stream.
func TestClusterTxnLibrdkafkaPartitionLeaderKilled(t *testing.T) {
	clusterEOS(t, true, false, func(owner int32) int { return 6 - int(owner) - int(eosBootstrap(owner)) })
}

// TestClusterTxnLibrdkafkaCoordinatorKVHangs: every KV call of the
// transaction coordinator hangs, so its registry row expires and the id
// moves to a survivor.
func TestClusterTxnLibrdkafkaCoordinatorKVHangs(t *testing.T) {
	clusterEOS(t, true, true, func(owner int32) int { return int(owner) })
}
