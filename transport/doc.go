// Package transport is the wire: the Kafka listener and its connections'
// lifecycle (accept, the connection ceiling, timeouts, drain), framing and
// the request header, read-ahead and the frame budgets, SASL PLAIN
// (handshake, authentication, the tenant a credential acts for), dispatch,
// the grouping of a batch API's queued requests, the version table's type
// and gate, and the ApiVersions answer.
//
// Every request enters its handler one way: its version table row names a
// Single handler or a Batch, and dispatch runs it, observes it (API,
// version, first error code, latency) and turns a handler's panic into
// closing that one connection. The rows and their handlers are declared by
// the caller (package node); handlers see a connection through *Conn's
// exported methods only, and keep their own per-connection state in the
// value Config.ConnValue makes.
//
// It must not reach for any particular Kafka API's semantics (what a
// Produce or a Fetch means, acks, transactions), the topic catalogue,
// consumer groups, or Queen's records: the wire moves frames and requests,
// the handlers decide what they mean.
package transport
