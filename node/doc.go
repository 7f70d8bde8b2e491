// Package node is one facade node: the Kafka listener, its connections and
// framing, the version table that both builds the ApiVersions answer and
// gates every request, the configuration read from the environment, and one
// file per Kafka API handler. Records, topics and offsets live in Queen and
// are reached through package queen; group state is package coordinator's.
//
// Cluster mode (QUEEN_KAFKA_NODE_ID set) is wired here too, in cluster*.go:
// the registry session claimed between Listen and Serve (package registry),
// Metadata's brokers and leaders read from its live set (package hashring),
// group ownership handed to the coordinator, and the catalogue kept current
// with topics other nodes create or widen. With the variable unset none of
// it is built.
package node
