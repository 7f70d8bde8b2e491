// Package assignor holds the server-side partition assignors of KIP-848
// consumer groups: uniform (Kafka's default, sticky) and range.
//
// It owns: turning a group's members, their resolved subscriptions and their
// current assignments into a target assignment, deterministically (the same
// Spec always gives the same Assignment, so any node that becomes a group's
// owner computes what its predecessor would have).
//
// It does not own, and must not reach for: the group state machine, member
// epochs and revocation (package consumergroup), topic metadata (the caller
// passes partition counts) or any I/O. It imports no other package of this
// module.
package assignor
