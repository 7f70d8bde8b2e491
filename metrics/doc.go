// Package metrics is the facade's Prometheus metrics: the collectors, a
// registry of the node's own (never the global default, so two nodes in one
// process, as in tests, never share a series), and what /metrics serves.
//
// It owns the metric names, labels and buckets, and nothing else. The wire,
// the node and the Queen client never see a prometheus type: they report
// events through narrow observer interfaces that *Metrics satisfies
// (transport.Observer for requests and connections, node.Observer, which
// embeds it, for produce, fetch and commits, queen.Observer for calls to
// Queen), and the node answers a Snapshot of its state (connections, groups,
// producers, transactions, the byte budgets, cluster membership) at scrape
// time. Event methods run on the request path: each is a few atomic adds on
// children resolved once per label set, with no allocation.
//
// Names follow Prometheus conventions: queen_kafka_ prefix, base units
// (seconds, bytes), _total on counters. The fetch session metrics
// (queen_kafka_fetch_session*) are Kafka's FetchSessionCache ones, read
// from the snapshot.
//
// It must not reach for what it measures: it imports no package of the
// node's, changes no state and answers no request; what it reads is the
// events it is handed and the Snapshot from the function New was given.
package metrics
