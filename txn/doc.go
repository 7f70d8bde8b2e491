// Package txn is the Kafka transaction coordinator: transactions by
// buffer-and-commit (seed 001, "Transactions and the idempotent producer").
//
// A transactional producer's records and consumer offsets are held in a
// Stage until EndTxn(commit), which writes all of it as ONE
// POST /api/v1/transaction (queen-api.md §8): the qk:txn: fence first, then
// the records, then the qk:groups: and qk:group: rows, so that records and
// offsets land together or not at all. EndTxn(abort) drops the stage and
// writes no record. Nothing uncommitted is ever in the log, which is why
// both isolation levels read the same records and why a committed
// transaction of N records advances the log end offset by N.
//
// It owns: the qk:txn:<id> row of every transactional id (§10), claimed by
// compare-and-set at InitProducerId, whose epoch bump fences the previous
// producer (PRODUCER_FENCED from then on, and an open transaction of the
// fenced epoch is dropped); one binding per (identity, transactional id),
// each with its own lock held across its calls to Queen; the state machine
// (empty, ongoing, committing, and abortable after a cap or a timeout) with
// Kafka's codes for a request in the wrong state; the caps
// (QUEEN_KAFKA_TXN_*, at most MaxPartitions partitions and MaxOffsets
// offsets per transaction, and a commit body within Queen's ceiling:
// body.go, whose limit the defaults are derived from); the one-second sweep that expires a transaction
// past its own timeout; and the answers of InitProducerId (transactional
// branch), AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn,
// and the staging half of a transactional Produce.
//
// A stage outlives the connection that opened it until its timeout, so a
// commit resumed from a new connection with the same producer id and epoch
// lands. In single mode it does not outlive the process: after a restart a
// resumed commit is INVALID_TXN_STATE and nothing of it is written. In
// cluster mode (Config.Cluster; cluster.go, shared.go) it does: the stage is
// in Queen under qk:txnstage:, written by whichever node received the
// records (Shared: a Produce goes to each partition's leader, a
// TxnOffsetCommit to the group's coordinator), the owner on the ring
// announces each transaction in the qk:txn: row and loads from that row an
// id it does not hold, so a commit resumed after a restart or an ownership
// move lands what Queen holds.
//
// It does not own: the wire (package transport decodes the requests, and
// package node's handlers decode the record batches into payload envelopes
// before they are staged), producer id
// allocation (the IDs seam) and sequence windows (the node checks a
// batch's sequence between Admit and Produce, under its producer's lock,
// so that a retried batch is staged once), consumer group membership (the
// Groups seam; the coordinator package also owns the layout of the
// qk:group: and qk:groups: rows a commit writes), which Kafka code a
// failed call to Queen is (Config.Fault, package faults' table as the node wires it), the
// Queen HTTP client (the narrow Queen interface), which node owns a
// transactional id (the node gates each request to the ring's owner), or
// where a stage lives (the Stages seam: Memory in single mode, QueenStages
// in cluster mode, where a commit at one node must land records produced
// through another).
//
// Every method takes and returns kmsg types and never fails as a Go error:
// each refusal is the Kafka code a broker would send, and a failed commit is
// never answered as a success.
package txn
