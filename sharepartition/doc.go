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
// It does not own, and must not reach for: the Kafka wire (ShareFetch,
// ShareAcknowledge and the admin APIs are node's; this package answers
// Kafka error codes, never encodes a response), the share group's
// membership and assignment (who is a member, when one is fenced: the
// caller says so through ReleaseMember), the Queen client (a narrow KV
// interface, *queen.Client satisfies it), or reading records (the caller
// reads the log and says which offsets it read).
package sharepartition
