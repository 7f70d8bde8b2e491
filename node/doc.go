// Package node is one facade node: the Kafka handlers behind the wire
// (package transport: the listener, connections, framing, SASL, dispatch),
// the version table's rows (versions.go, each naming its handler), the
// configuration read from the environment, the topic catalogue, and one
// file per Kafka API handler. Records, topics and
// offsets live in Queen and are reached through package queen. What a
// client is answered when a Queen call fails is one table, faults.go. The
// record codec and its decode budget are package recordbatch's; producer
// ids and the sequencing of idempotent batches package producer's.
//
// It does not own group state: membership, committed offsets and their
// qk:group:/qk:groups:/qk:fence: rows are package coordinator's, which the
// group and offset handlers call and which asks back only through narrow
// seams: ownership.Owners (who coordinates a key) and the Client's Topics
// (which partitions this node serves, answered from the connection's
// catalogue).
// It does not own the registry's qk:node: rows either, nor transactions:
// transactional ids, their qk:txn: rows, stages, caps and commits are
// package txn's, which the transaction handlers, InitProducerId's
// transactional branch and a transactional Produce call (transactions.go
// wires it), and which asks back through narrow seams: producer ids, the
// group coordinator's membership rule, the partitions a transaction may
// name, and the fault table's transaction row.
//
// Cluster mode (QUEEN_KAFKA_NODE_ID set) is wired here, in cluster*.go, from
// explicit parts and without a pointer back to the Node: the registry
// session (package registry) started from its registry.Config and the Queen
// KV route between Listen and Serve; registry.Ownership handed to the
// coordinator, whose DropUnowned runs at every change of the live set;
// Metadata's brokers and leaders read from the live set (package topology);
// and the catalogue kept current with topics other nodes create or widen.
// With the variable unset none of it is built.
//
// Every request passes one dispatch point (transport's), whether answered
// alone or in a group with the Produce requests behind it, and is reported
// there to the node's Observer (observe.go); the Queen client reports each
// call to its queen.Observer. Package metrics implements both, and the
// operator listener (ops.go, package operator) serves its registry beside
// /healthz, /readyz and pprof. The node's parts answer their state for a
// scrape through Stats methods (coordinator, producer, txn, registry).
//
// A Produce's path, socket to Queen and back: transport (read, gate, group
// the Produce requests waiting, dispatch) -> produce.go's batch handler, top
// to bottom (admit, decode with recordbatch, sequence with producer, push)
// -> queen; back through dispatch, which observes every answer and writes
// those owed a frame (acks=0: none).
package node
