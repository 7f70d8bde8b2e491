// Package sharegroup owns the KIP-932 share groups this node coordinates:
// ShareGroupHeartbeat's membership state machine (joins with epoch 0 and a
// client-chosen member id as KIP-1082 asks, leaves with epoch -1, session
// expiry fencing a member), the group epoch, the target assignment and its
// epoch, ShareGroupDescribe, the share-group rows of ListGroups, what
// DeleteGroups does to a share group, the membership check ShareFetch and
// ShareAcknowledge make on any node (Member), and the qk:sg: rows of Queen's
// key/value store that let a new owner continue a group (written with
// compare-and-set, the previous owner fenced as package consumergroup does).
//
// Assignment. The simple share assignor here gives every member every
// partition of every topic it subscribes to (issue 22's choice: a share
// partition is read by many members at once, and package sharepartition
// keeps each record with one member at a time). Kafka 4.2's SimpleAssignor
// differs: it spreads partitions over members (a member gets a subset when
// members are fewer than partitions, and a partition is shared only when
// members outnumber partitions), so that fewer members contend per
// partition. Share members never revoke: a member's epoch moves straight to
// the assignment epoch at its next heartbeat, as Kafka's share group's do.
// A join (epoch 0) naming a member id the group holds is that member
// rejoining (KIP-1082: a client keeps its id for life): it continues at its
// epoch and is answered its whole assignment.
//
// Sessions. A member not heard from for the session timeout (the group's
// share.session.timeout.ms through Config.GroupConfig, else the broker's)
// is fenced on the owner: removed, the group epoch bumped, and
// Config.OnMemberGone told, as after a leave. A new owner restarts every
// member's session from the takeover, as Kafka's coordinator does when it
// loads its groups.
//
// Member answers from the member's KV row on any node; a positive answer is
// cached for memberCacheTTL, so a member fenced on another node may still be
// answered a member there for that long (the owner forgets its own cache
// entry at once). A negative answer is never cached.
//
// It does not own, and must not reach for:
//   - the wire: package node's handlers call in with decoded kmsg requests;
//   - the Queen HTTP client: it sees only the narrow KV interface;
//   - per-partition record state (acquisitions, acknowledgements): package
//     sharepartition owns it; this package only deletes a deleted group's
//     share-partition rows through sharepartition.DeleteGroup, and tells the
//     caller through OnMemberGone when a member leaves or is fenced so that
//     what the member holds is released there;
//   - classic and consumer-protocol groups (packages coordinator and
//     consumergroup): node asks each which group type holds an id;
//   - topics: the caller's Topics lists them (names, ids, partition counts);
//   - who owns a group in a cluster: ownership.Owners answers;
//   - group configs (share.session.timeout.ms ...): Config.GroupConfig
//     answers them when set.
//
// Every method answers with Kafka error codes, never a Go error, except
// State, whose callers map a store failure themselves. A KV write that
// failed is never answered as a success: the group is dropped from memory
// and reloaded from the store at its next request.
package sharegroup
