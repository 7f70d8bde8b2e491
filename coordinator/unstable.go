package coordinator

import "context"

// TopicPartition is one partition of a group's offsets.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Unstable tells OffsetFetch which partitions of a group hold an offset
// staged by a transaction that has not ended (TxnOffsetCommit, package
// txn). With require_stable (v7+, KIP-447) such a partition is answered
// UNSTABLE_OFFSET_COMMIT rather than the offset committed before it, so that
// a member taking it over in a rebalance waits for the previous owner's
// transaction to end instead of starting from a position that transaction
// is about to move (and copying the same inputs twice). The transaction
// coordinator owns the staged offsets; the group coordinator only asks.
type Unstable interface {
	// PendingOffsets is the partitions of group, as identity reaches it
	// through kv, with an offset of an open transaction.
	PendingOffsets(ctx context.Context, identity string, kv KV, group string) (map[TopicPartition]bool, error)
}
