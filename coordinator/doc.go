// Package coordinator is the classic Kafka group coordinator and the store
// of committed offsets.
//
// It owns: the group state machine (Empty, PreparingRebalance,
// CompletingRebalance, Stable, Dead) of every group this node coordinates,
// one lock per group, membership held in memory only (a restart is a broker
// restart: survivors are answered UNKNOWN_MEMBER_ID and rejoin); the answers
// of JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
// ListGroups, DescribeGroups, DeleteGroups, OffsetDelete and FindCoordinator;
// and the qk:group:, qk:groups: and qk:fence: rows of Queen's key/value store
// (queen-api.md §10), which are the only durable state a group has.
//
// It does not own: the wire (package node decodes and encodes), the Queen
// HTTP client (package queen; the coordinator sees only the narrow KV
// interface), or who owns a group in a cluster (the Ownership interface; in
// single mode the answer is always this node).
//
// Every method takes and returns kmsg types and never fails as a Go error:
// each refusal is the Kafka error code a broker would send, and a Queen
// failure is mapped per queen-api.md §0.2 for group and offset APIs
// (401/403 GROUP_AUTHORIZATION_FAILED, everything retriable
// COORDINATOR_NOT_AVAILABLE, never a throttle). A KV write that failed is
// never answered as a success.
package coordinator
