// Package node is one facade node: the Kafka listener, its connections and
// framing, the version table that both builds the ApiVersions answer and
// gates every request, the configuration read from the environment, and one
// file per Kafka API handler. Records, topics and offsets live in Queen and
// are reached through package queen; group state is package coordinator's.
package node
