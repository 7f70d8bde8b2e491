// Package producepush writes a sequenced produce group to Queen: the
// batches sequencing kept (Part, one per partition of a request) become
// Queen pushes, and each batch gets the outcome its push answered.
//
// It owns: the sharding of a group into up to MaxShards concurrent pushes,
// each holding whole partitions in group order (Queen keeps order within a
// partition and promises nothing across partitions, queen-api §5), so that
// a chain of idempotent batches stays in one push; the sizing of each
// push's body by what its items render; the fallback to one push per
// request, in order, when a coalesced push is over Queen's body ceiling;
// and the reading of the answers into a producer.Outcome per batch (a
// failed call is every batch's outcome, with the throttle a 429 carried;
// a batch Queen's dedup window answered whole is a Duplicate).
//
// It does not own, and must not reach for: the Kafka wire (it imports no
// kmsg: package node's Produce handler lays out, admits and answers the
// requests), the decoding of batches into envelopes (package recordbatch),
// the sequencing and settling of batches and their dedup keys (package
// producer), which Kafka code a Queen failure answers (package faults), or
// a transaction's staging (package txn). It sees the Queen client only
// through Pusher, and never imports package node or transport.
package producepush
