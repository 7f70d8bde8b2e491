// Package sharepartition owns one share-partition's state (KIP-932): the
// share-partition start offset (SPSO), its end offset (SPEO), the in-flight
// records between them with their states (available, acquired by a member
// until a deadline, acknowledged, archived) and delivery counts, the
// acquisition locks and the in-flight window, archiving past the delivery
// limit, and the state's durable form: one Queen KV row per share-partition
// (queen.ShareStateKey), compact ranges of equal state, written with
// compare-and-set on every change, as Kafka's share coordinator keeps it.
//
// Partition is the state machine alone (no I/O, time passed in): Acquire,
// Acknowledge, ReleaseMember, Sweep, AdvanceLogStart. Store adds the KV row:
// Load (initializing the SPSO from share.auto.offset.reset through a Log),
// Update (one fenced write per request per partition, one retry on a lost
// compare-and-set) and the admin operations (Describe, Alter, Delete).
//
// Durability. Every change is written before the caller answers: an
// acquisition before its records are handed out, an acknowledgement before
// it is answered success. Kafka persists no acquisition (one leader holds
// them in memory); here any node serves any partition, so the acquisition
// itself must be fenced, and delivery counts stay exact across restarts
// (Kafka under-counts the delivery a crash interrupts). After a facade
// SIGKILL nothing answered success is lost, and the records acquired but
// not acknowledged stay locked to their member until the stored deadline,
// then are redelivered with their count kept (a member fenced meanwhile
// has them released at once through ReleaseMember). Lock expiry writes
// nothing: every node derives it from the stored deadline, so clock skew
// between nodes lengthens or shortens a lock by the skew. A put that loses
// its compare-and-set is rerun once on the row that won (the KV answer
// carries it); a second loss is ErrContended (COORDINATOR_NOT_AVAILABLE),
// with nothing applied. A put whose outcome is unknown drops the cache: an
// acknowledgement then either landed or its records are redelivered when
// their locks expire (at least once, never lost).
//
// It does not own, and must not reach for: the Kafka wire (ShareFetch,
// ShareAcknowledge and the admin APIs are node's; this package answers
// Kafka error codes, never encodes a response), the share group's
// membership and assignment (who is a member, when one is fenced: the
// caller says so through ReleaseMember), the Queen client (a narrow KV
// interface, *queen.Client satisfies it), or reading records (the caller
// reads the log and says which offsets it read).
package sharepartition
