// Package registry is cluster mode's membership: one row per facade node in
// Queen's key/value store under qk:node:<cluster>:<id> (queen-api.md §10),
// written with the facade's own credential, expiring one TTL after its last
// write. It is shaped like etcd's concurrency.Session: Start claims the node
// id and keeps the row alive, View and Owner answer who is live and who owns
// a key, Done is closed when the id is lost or the session closed, Close
// hands the id back, and Leave hands it back and waits until the peers have
// read that (a controlled shutdown).
//
// Liveness is the store's expiry and nothing else. No node ever compares its
// clock with another's: a row is live because Queen still returns it, and a
// node is dead because its row stopped being returned. Every heartbeat is
// one KV call that both refreshes the own row (fenced on the version held,
// so a second process with the same id is noticed rather than shared) and
// reads the live set, so the set a node acts on always includes its own
// latest write.
//
// Ownership is the registry as the coordinator asks it (it implements
// ownership.Owners): the owner of any key, a group id or a
// transactional id, is the live node the rendezvous hash names, and no
// owner is known before a session is bound or while it is not trusted.
//
// It owns the qk:node: rows and nothing else of the store; it must not touch
// group rows or fences, topic records, or the wire. What it does not decide
// is what a caller does with an answer: it never refuses a Kafka request
// itself. A non-nil Err (and so a failing Owner) means "answer group RPCs
// COORDINATOR_NOT_AVAILABLE"; a closed Done with a *LostError means another
// process runs with this node id.
package registry
