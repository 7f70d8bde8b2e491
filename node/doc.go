// Package node is one facade node: the Kafka handlers, one file per API
// (produce.go, fetch.go, metadata.go...), the version table's rows
// (versions.go: each API's window, its handler, and the one place its
// version reasoning is written, from which the README's support matrix is
// generated), and the wiring of the rooms a node is built from:
//   - transport, the wire: listener, connections, framing, SASL, dispatch;
//     node hands it the table and hears of connections and answers through
//     its Config hooks (observe.go);
//   - catalogue, the topics (widths, ids, verdicts), asked with the caller's
//     identity and Queen client (caller.go), never a connection;
//   - config, the facade's variables, read once and passed in validated;
//   - faults, the one table of what a client is answered when a Queen call
//     fails;
//   - topology, the brokers, cluster id and controller Metadata answers
//     (single mode's own, or the registry's live set in cluster mode);
//   - coordinator, consumer groups and committed offsets, asked back only
//     through ownership.Owners and the client's Topics (coordinator.go);
//   - txn, transactional ids, their stages and commits, asked back through
//     producer ids, the group rule and the partitions a transaction may name
//     (transactions.go);
//   - producer, producer ids and the sequencing of idempotent batches;
//   - fetchread, Queen's records read into Fetch answers under the
//     response, partition and node budgets (and ListOffsets' search);
//     fetchsession and fetchwatch, a Fetch's sessions and parked polls;
//   - registry, cluster mode's qk:node: session, wired in cluster.go from
//     explicit parts between Listen and Serve (with QUEEN_KAFKA_NODE_ID
//     unset none of it is built);
//   - metrics and operator: every answered request and every Queen call
//     reported to metrics, served by the operator listener (ops.go) beside
//     /healthz, /readyz and pprof; the parts answer a scrape through their
//     Stats methods.
//
// It must not reach for what those rooms own: frames, sockets or SASL state
// (a handler sees a connection only through *transport.Conn's exported
// methods and its connState), the catalogue's caches and refresh, group or
// transaction state and their KV rows, the registry's rows, the record codec
// (package recordbatch) or Queen's HTTP routes other than through package
// queen. A handler decides what a request means and asks the rooms.
//
// A Produce's path, socket to Queen and back: transport (read, gate, group
// the Produce requests waiting, dispatch) -> produce.go's batch handler, top
// to bottom (admit, decode with recordbatch, sequence with producer, push)
// -> queen; back through dispatch, which observes every answer and writes
// those owed a frame (acks=0: none).
package node
