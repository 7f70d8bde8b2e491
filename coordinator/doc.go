// Package coordinator is the classic Kafka group coordinator and the store
// of committed offsets.
//
// It owns: the group state machine (Empty, PreparingRebalance,
// CompletingRebalance, Stable, Dead) of every group this node coordinates,
// one lock per group, membership held in memory only (a restart is a broker
// restart: survivors are answered UNKNOWN_MEMBER_ID and rejoin); static
// membership (KIP-345, static.go): a member's group.instance.id outlives its
// member id, a restart inside the session timeout takes over its place and
// assignment with no rebalance, and the id it replaced is
// FENCED_INSTANCE_ID on every request that names the instance; the answers
// of JoinGroup (v0-9), SyncGroup (v0-5), Heartbeat (v0-4), LeaveGroup
// (v0-5, several members), OffsetCommit (v2-9), OffsetFetch (v1-9, several
// groups), ListGroups, DescribeGroups (v0-5), DeleteGroups, OffsetDelete
// and FindCoordinator, and the membership check of TxnOffsetCommit;
// and the qk:group:, qk:groups: and qk:fence: rows of Queen's key/value store
// (queen-api.md §10), which are the only durable state a group has. In
// fenced (cluster) mode a node takes a group's fence by compare-and-set
// when the first member joins it there, before any member reads its
// starting offsets, and every commit re-checks it; generations continue
// from the one the fence last carried.
//
// It does not own, and must not reach for:
//   - the wire: package transport reads and writes the frames, package
//     node's handlers call in with decoded requests;
//   - the Queen HTTP client (package queen): the coordinator sees only the
//     narrow KV interface, and writes no rows but its own three families;
//   - who owns a key (a group id; later a transactional id) in a cluster:
//     the ownership.Owners interface answers, registry.Ownership in
//     cluster mode and ownership.Single otherwise; the coordinator never
//     reads the registry, and
//     cluster mode tells it of a changed live set through DropUnowned;
//   - which topics and partitions exist: the caller's catalogue (package
//     catalogue) answers through the Client's Topics, and OffsetCommit writes only the
//     partitions it serves.
//
// Every method takes and returns kmsg types and never fails as a Go error:
// each refusal is the Kafka error code a broker would send, and a Queen
// failure is mapped per queen-api.md §0.2 for group and offset APIs
// (401/403 GROUP_AUTHORIZATION_FAILED, everything retriable
// COORDINATOR_NOT_AVAILABLE, never a throttle; kvCode). A KV write that
// failed is never answered as a success.
package coordinator
