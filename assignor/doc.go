// Package assignor holds the server-side partition assignors of KIP-848
// consumer groups: uniform (Kafka's default, sticky) and range.
//
// It owns: turning a group's members, their resolved subscriptions and their
// current assignments into a target assignment, deterministically (the same
// Spec always gives the same Assignment, whatever the order of its members,
// topics and owned partitions, so any node that becomes a group's owner
// computes what its predecessor would have).
//
// Both assignors: every partition of every topic some member subscribes to
// goes to exactly one of its subscribers, and nothing else is assigned. A
// subscribed topic absent from Spec.Partitions (or with no partitions) is
// ignored, and so is an owned partition that no longer exists or whose
// topic its member no longer subscribes to; a partition two members claim
// (never in a valid target assignment) counts as the first's by member id.
//
// uniform is Kafka 4's UniformAssignor. When every member subscribes to the
// same topics (homogeneous) it is UniformHomogeneousAssignmentBuilder: each
// member gets floor(P/N) or one more partition, so counts differ by at most
// one, and keeps as many of its current partitions as that quota allows
// (its lowest, topics by name). The one-more quotas go to the members that
// keep the most, which Kafka leaves to iteration order: hence a member
// joining moves only the floor(P/(N+1)) partitions it receives, and a member
// leaving moves only its own. Otherwise it is
// UniformHeterogeneousAssignmentBuilder: members keep everything they own of
// topics they still subscribe to; unowned partitions go, topics with the most
// partitions per subscriber first, to each topic's least loaded subscriber;
// then partitions move from a topic's most loaded subscriber holding one to
// its least loaded while they differ by more than one, over at most 16
// passes of the topics. The result is balanced per topic (no subscriber of a
// topic holds one of its partitions while having two more in total than
// another subscriber), which for overlapping subscriptions can leave counts
// like 9, 10, 11 where 10, 10, 10 exists, as in Kafka.
//
// Neither uses Member.Rack: Kafka 4.0's and 4.1's server-side assignors ignore
// racks (rack matching came to its range assignor later and is proposed for
// uniform), and a Queen partition has no replica racks to match.
//
// range is Kafka 4's server-side RangeAssignor (rewritten for 3.9 by
// KAFKA-16944): each topic's partitions are cut into contiguous ranges of
// floor(P/S) or one more (the larger first) for its S subscribers ordered
// static members first by instance id, then the rest by member id. Members
// with the same subscriptions over topics of one size are co-partitioned
// (the same partition numbers of every topic). It does not read Owned: its
// only stickiness is the order, so a static member that rejoins under a new
// member id keeps its ranges, while a member joining or leaving shifts them.
//
// It does not own, and must not reach for: the group state machine, member
// epochs and revocation (package consumergroup), topic metadata (the caller
// passes partition counts) or any I/O. It imports no other package of this
// module.
package assignor
