// Package consumergroup owns the KIP-848 consumer-protocol groups this node
// coordinates: ConsumerGroupHeartbeat's state machine (group epoch, target
// assignment and its epoch, each member's epoch and Kafka's
// CurrentAssignmentBuilder states, revocation before reassignment), session
// and rebalance timeouts, static membership (instance ids, the temporary
// leave of epoch -2), server-side regular-expression subscriptions resolved
// against the catalogue, ConsumerGroupDescribe, the consumer-group rows of
// ListGroups, the member-epoch checks of OffsetCommit v9+, OffsetFetch v9+
// and TxnOffsetCommit, and the qk:cg: rows of Queen's key/value store that
// let a new owner continue a group without resetting it to epoch 0.
//
// It does not own, and must not reach for:
//   - the wire: package node's handlers call in with decoded kmsg requests;
//   - the Queen HTTP client: it sees only the narrow KV interface;
//   - the classic protocol and committed offsets (package coordinator):
//     offsets of a consumer-protocol group stay in the coordinator's
//     qk:group: rows, so a group's position never depends on its protocol;
//     the coordinator asks this package, through its own narrow interface,
//     which protocol a group id has and whether a member's epoch is current;
//   - topics: the caller's Topics lists them (names, ids, partition counts);
//   - who owns a group in a cluster: ownership.Owners answers;
//   - computing an assignment: package assignor does, from the members and
//     partition counts this package hands it.
//
// Every method answers with Kafka error codes, never a Go error. A KV write
// that failed is never answered as a success: the group is dropped from
// memory and reloaded from the store at its next request.
package consumergroup
