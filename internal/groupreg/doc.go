// Package groupreg is the registry of the groups of one kind a node
// coordinates (KIP-848 consumer groups, KIP-932 share groups), shared by
// packages consumergroup and sharegroup: groups keyed by identity and id,
// loaded from the store at most once at a time, the ids known to have no
// rows, the drops ownership moves cause, and a request's way to its group,
// locked and still alive (Acquire; Retry, which asks once more for a group
// let go meanwhile).
//
// It also writes a group owner's rows (Write, and Owner.Write over the
// account of what changed, Rows): every call led by the compare-and-set of
// the group's meta row, a new owner's first by the fence; and it reads
// (Read) and deletes (Delete) a group's rows under its prefix. It owns no
// group state and must not reach for the wire or a group's row layout:
// the caller's load function reads and takes over a group, the caller
// encodes and decodes its rows, and a group's Kill ends its life (timers
// stopped) when the registry lets it go.
//
// A member's session timer (Session) is here too: both protocols fence a
// member its session timeout after its last heartbeat, and what fencing
// does is the caller's.
package groupreg
