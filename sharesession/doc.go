// Package sharesession is KIP-932's share sessions as Kafka's
// ShareSessionCache keeps them: one session per (group, member) on this
// node, opened by ShareSessionEpoch 0 (replacing the member's old one),
// advanced by each next epoch (a wrong epoch is INVALID_SHARE_SESSION_EPOCH,
// an unknown session SHARE_SESSION_NOT_FOUND), closed by -1; the session's
// share-partitions, added and forgotten incrementally; the per-node bound
// (group.share.max.share.sessions: a new session past it is
// SHARE_SESSION_LIMIT_REACHED); and, as Kafka evicts, the session of a
// connection that closed.
//
// A session ends with the share-partitions its member may still hold
// records of (Close, Disconnected): the caller releases them, as Kafka's
// broker does when a share session ends.
//
// It does not own, and must not reach for: the Kafka wire (the caller
// decodes the request and encodes the answer), share-partition state
// (package sharepartition), membership (the caller checks it first), or any
// I/O: it is an in-memory table under one lock.
package sharesession
