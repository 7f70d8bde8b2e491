package node

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// apiTable is THE version table's rows (transport.Table builds the
// ApiVersions answer from them and gates every incoming request with them,
// so an advertised version is a handled version).
// Windows contain seed 001's support matrix (nothing a seed advertised is
// withdrawn) and go beyond it where an issue says so. One row per API,
// sorted by key number, its reason on the second line. A row's Why is the
// one place its API's version reasoning is written (what each version adds
// and how the facade answers it, where the window ends and why); handler
// comments say what the handler does and point here. Add a row when the
// handler lands, then regenerate the README's matrix:
// go test ./node/ -run TestREADMESupportMatrix -update.
func (n *Node) apiTable() []transport.Row {
	return []transport.Row{
		{Key: kmsg.Produce.Int16(), Min: 3, Max: 13, Handler: n.produceBatch(), // 0
			Why: "Floor: v3 is the first version whose records are RecordBatch v2. v10's leader hints ride only on NOT_LEADER_OR_FOLLOWER, which Produce never answers (any node writes any partition); v11's TRANSACTION_ABORTABLE is never answered (v10's codes stand at every version); v12 is KIP-890's protocol: under `transaction.version` 2 a transactional batch adds its partition to the transaction itself (opening it), below it (QUEEN_KAFKA_TRANSACTION_VERSION 0 or 1) AddPartitionsToTxn stays required at every version, as Kafka's clients keep transactional produces at v11 then; v13 names topics by id (an id no topic has is UNKNOWN_TOPIC_ID). Ceiling: kmsg's newest."},
		{Key: kmsg.Fetch.Int16(), Min: 4, Max: 18, Handler: transport.Handle(n.handleFetch), // 1
			Why: "Ceiling: v18 is the newest schema; v4 is the schema's own floor. v7's fetch sessions (KIP-227) live in a per-node cache of 1,000, their refusals answered as the top-level error alone; v9's current_leader_epoch is not checked (every leader epoch is -1); v10 lets a zstd topic be answered zstd (uncompressed below); v11's preferred_read_replica is -1 (no followers); v12's diverging_epoch stays -1/-1 (the log is never truncated); v13 names topics by id, in requests, answers and sessions (an id no topic has is UNKNOWN_TOPIC_ID, a session crossing v13 either way FETCH_SESSION_TOPIC_ID_ERROR); v8, v14 and v15–v18 add throttling this facade already answers, tiered storage, follower-only fields and leader hints for errors never answered."},
		{Key: kmsg.ListOffsets.Int16(), Min: 1, Max: 11, Handler: transport.Handle(n.handleListOffsets), // 2
			Why: "The whole schema: v4's current leader epoch is not fenced (every epoch is -1) and v5's OFFSET_NOT_AVAILABLE is never answered; v7's MAX_TIMESTAMP is exact on the append clock; v8's -4 is the log start, v9's -5 and v11's -6 are -1/-1, as Kafka answers them without tiered storage; v10's timeout only bounds tiered reads. A sentinel below its version is UNSUPPORTED_VERSION, as in Kafka. v1 is the schema's own floor."},
		{Key: kmsg.Metadata.Int16(), Min: 0, Max: 13, Handler: transport.Handle(n.handleMetadata), // 3
			Why: "Below v4 a named topic is always auto-created, from v4 only if the request allows it, and never with QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE=false (UNKNOWN_TOPIC_OR_PARTITION, as Kafka's auto.create.topics.enable=false); v10 answers topic ids (the Queen queue's id), v11 drops the cluster's authorized operations, v12 takes topics by id (never auto-created; an id below v12 is INVALID_REQUEST, as in Kafka), v13's top-level error is always 0 (no rebootstrap is ever asked). Ceiling: kmsg's newest."},
		{Key: kmsg.OffsetCommit.Int16(), Min: 2, Max: 10, Handler: transport.Handle(n.handleOffsetCommit), // 8
			Why: "Kafka's ceiling (4.2): v10 names topics by id, resolved through the catalogue (an id no topic has is UNKNOWN_TOPIC_ID). v7's `group_instance_id` is fenced as Kafka fences it (FENCED_INSTANCE_ID); v9's generation is a KIP-848 group's member epoch (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID as Kafka answers them; a KIP-848 member below v9 is UNSUPPORTED_VERSION) or a classic group's generation. Floor: v0 and v1 are the ZooKeeper-era offset store."},
		{Key: kmsg.OffsetFetch.Int16(), Min: 1, Max: 10, Handler: transport.Handle(n.handleOffsetFetch), // 9
			Why: "Kafka's ceiling (4.2): v10 names topics by id (an id no topic has is UNKNOWN_TOPIC_ID; an all-topics answer names the committed topics the catalogue has an id for). v8 fetches several groups per request, each answered on its own; v9's member id and epoch are checked for a KIP-848 group (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH) and, as Kafka does for classic groups, not for a classic one. v7's `require_stable` is Kafka's (KIP-447): a partition with an offset staged by a transaction not yet ended is UNSTABLE_OFFSET_COMMIT (per partition, every version), so that a new owner waits for that transaction; without it the last committed offset is answered."},
		{Key: kmsg.FindCoordinator.Int16(), Min: 0, Max: 6, Handler: transport.Handle(n.handleFindCoordinator), // 10
			Why: "The whole schema: v4 batches keys, each answered on its own; v5 only lets the client read TRANSACTION_ABORTABLE; v6's share-group keys are INVALID_REQUEST, as on a broker without a share coordinator. Group and transaction keys resolve to this node in single mode and to the key's rendezvous owner in cluster mode."},
		{Key: kmsg.JoinGroup.Int16(), Min: 0, Max: 9, Handler: transport.Handle(n.handleJoinGroup), // 11
			Why: "Kafka's ceiling: v4 MEMBER_ID_REQUIRED, v5 `group_instance_id` (static membership, KIP-345: a restart inside the session timeout rebalances nothing), v7 the protocol type answered, v8 `reason` (logged), v9 `skip_assignment` for a restarted static leader (KIP-814)."},
		{Key: kmsg.Heartbeat.Int16(), Min: 0, Max: 4, Handler: transport.Handle(n.handleHeartbeat), // 12
			Why: "Kafka's ceiling: v3 `group_instance_id` (a replaced static member is FENCED_INSTANCE_ID), v4 the flexible encoding."},
		{Key: kmsg.LeaveGroup.Int16(), Min: 0, Max: 5, Handler: transport.Handle(n.handleLeaveGroup), // 13
			Why: "Kafka's ceiling: v3 several members per request, each answered its own code, by member id or by instance id alone; v4 the flexible encoding; v5 a reason per member (logged)."},
		{Key: kmsg.SyncGroup.Int16(), Min: 0, Max: 5, Handler: transport.Handle(n.handleSyncGroup), // 14
			Why: "Kafka's ceiling: v3 `group_instance_id`, v4 the flexible encoding, v5 the protocol type and name, checked against the group's and answered."},
		{Key: kmsg.DescribeGroups.Int16(), Min: 0, Max: 6, Handler: transport.Handle(n.handleDescribeGroups), // 15
			Why: "Kafka's ceiling: v4 names each member's `group_instance_id`, v5 is the flexible encoding, v6 (KIP-1043) answers a group that does not exist GROUP_ID_NOT_FOUND with a message where older versions describe it Dead, and a KIP-848 or share group the same way, as Kafka 4 does (\"is not a classic group\"; ConsumerGroupDescribe describes it); v3's `include_authorized_operations` is answered every group operation, as a Kafka broker with no authorizer answers."},
		{Key: kmsg.ListGroups.Int16(), Min: 0, Max: 5, Handler: transport.Handle(n.handleListGroups), // 16
			Why: "The whole schema: v5's `group_type` is `classic`, `consumer` (KIP-848 groups, listed with protocol type `consumer` and their own states) or `share` (KIP-932 share groups, protocol type `share`, Empty or Stable); v4's `states_filter` and v5's `types_filter` are honoured, case-insensitively."},
		{Key: kmsg.SASLHandshake.Int16(), Min: 0, Max: 1, Handler: transport.SASLHandshake, // 17
			Why: "Both versions: the two SASL flows (raw tokens after v0, SaslAuthenticate after v1); PLAIN is the one mechanism."},
		{Key: kmsg.ApiVersions.Int16(), Min: 0, Max: 5, Handler: transport.ApiVersions, // 18
			Why: "The whole schema: from v3 the `transaction.version` feature is advertised, supported 0–2 and finalized at QUEEN_KAFKA_TRANSACTION_VERSION (2 by default; 0 lists none finalized), which is how clients choose KIP-890's protocol; v4 only changes how features may be; v3's client software name and version are logged, never refused; v5's cluster and node ids are checked against Metadata's, REBOOTSTRAP_REQUIRED on a misrouted connection and INVALID_REQUEST for one without the other. A version outside the window is answered UNSUPPORTED_VERSION with the table, encoded at v0."},
		{Key: kmsg.CreateTopics.Int16(), Min: 2, Max: 7, Handler: transport.Handle(n.handleCreateTopics), // 19
			Why: "v4 lets -1 mean the default (QUEEN_KAFKA_DEFAULT_PARTITIONS, every live broker for the factor; accepted at every version), v5 carries the created topic's width, factor and configs back, v6 answers a throttled create THROTTLING_QUOTA_EXCEEDED, v7 answers the new queue's id. Ceiling: kmsg's newest."},
		{Key: kmsg.DeleteTopics.Int16(), Min: 1, Max: 6, Handler: transport.Handle(n.handleDeleteTopics), // 20
			Why: "v5 adds `error_message`, v6 names topics by name or id (an unknown id is UNKNOWN_TOPIC_ID). Ceiling: kmsg's newest."},
		{Key: kmsg.InitProducerID.Int16(), Min: 0, Max: 5, Handler: transport.Handle(n.handleInitProducerID), // 22
			Why: "The whole schema kmsg knows. v3 (KIP-360) may carry the producer's id and epoch: a transactional id's epoch is bumped only if they are its current ones (a retried bump is answered what it granted, anything else is fenced, PRODUCER_FENCED from v4 and INVALID_PRODUCER_EPOCH below); without a transactional id the answer is a fresh id at epoch 0 whatever the request names, as Kafka answers it. v5 only lets the client read TRANSACTION_ABORTABLE (KIP-890), which InitProducerId never answers, here or in Kafka. Ceiling: v6 (KIP-939's keep_prepared, two-phase commit with an external coordinator) is past kmsg's newest, and KIP-890 needs nothing of it."},
		{Key: kmsg.OffsetForLeaderEpoch.Int16(), Min: 0, Max: 4, Handler: transport.Handle(n.handleOffsetForLeaderEpoch), // 23
			Why: "The whole schema: every partition has one leader epoch, -1, whose end offset is the high watermark; any other epoch is undefined (-1/-1). v2's current_leader_epoch is not fenced, as ListOffsets does not: the epoch never changes; v3's replica_id changes nothing, as in Kafka."},
		{Key: kmsg.AddPartitionsToTxn.Int16(), Min: 0, Max: 3, Handler: transport.Handle(n.handleAddPartitionsToTxn), // 24
			Why: "Ceiling: v4 and v5 are KIP-890's broker-to-broker form (batched transactions, `verify_only`), which Kafka refuses a client (CLUSTER_AUTHORIZATION_FAILED): a partition leader here checks the transaction itself, and under `transaction.version` 2 Produce adds the partition without this API."},
		{Key: kmsg.AddOffsetsToTxn.Int16(), Min: 0, Max: 4, Handler: transport.Handle(n.handleAddOffsetsToTxn), // 25
			Why: "The whole schema: v4 only lets the client read TRANSACTION_ABORTABLE (KIP-890), never answered; under `transaction.version` 2 clients stop sending this API (TxnOffsetCommit v5 adds the group), and it is still served."},
		{Key: kmsg.EndTxn.Int16(), Min: 0, Max: n.txnWindow(5, 4), Handler: transport.Handle(n.handleEndTxn), // 26
			Why: "v5 is KIP-890's protocol: every commit and abort moves the producer to the next epoch (a fresh producer id at epoch 0 once it is exhausted), answered with it, and a late EndTxn of a decided transaction is fenced; a retry of the decision is answered what it granted, as Kafka's TV2 coordinator does. v4 only adds TRANSACTION_ABORTABLE, never answered; below v5 a late EndTxn is told from the next transaction by its connection (docs/transactions.md). Ceiling: v4 when QUEEN_KAFKA_TRANSACTION_VERSION is below 2, so no client can enter the protocol refused (Kafka keeps v5 advertised and leaves that to the client)."},
		{Key: kmsg.TxnOffsetCommit.Int16(), Min: 0, Max: n.txnWindow(6, 4), Handler: transport.Handle(n.handleTxnOffsetCommit), // 28
			Why: "Kafka's ceiling (4.4). Floor: kafka-clients' builder throws below v3 whenever group metadata is set (every KIP-447 loop). v3's `group_instance_id` is fenced as OffsetCommit's is; v4 only adds TRANSACTION_ABORTABLE, never answered; v5 (KIP-890) adds the group, opening the transaction, without AddOffsetsToTxn (capped at v4 below `transaction.version` 2, as EndTxn). For a KIP-848 group the generation is the member epoch, checked as OffsetCommit's: a stale one is ILLEGAL_GENERATION below v6, STALE_MEMBER_EPOCH from v6. v6 (KIP-1319) names topics by id, resolved through the catalogue (an id no topic has is UNKNOWN_TOPIC_ID); its GROUP_ID_NOT_FOUND for a group that does not exist is answered as below v6, as OffsetCommit v9+ does here (the group is usually in the store, its membership lost with a restart, and ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID sends the member to rejoin; Kafka's clients abort the transaction on any of them)."},
		{Key: kmsg.DescribeACLs.Int16(), Min: 1, Max: 3, Handler: transport.Handle(n.handleDescribeAcls), // 29
			Why: "The whole schema; every answer is SECURITY_DISABLED, as a Kafka broker with no authorizer answers."},
		{Key: kmsg.CreateACLs.Int16(), Min: 1, Max: 3, Handler: transport.Handle(n.handleCreateAcls), // 30
			Why: "The whole schema; each creation is refused SECURITY_DISABLED."},
		{Key: kmsg.DeleteACLs.Int16(), Min: 1, Max: 3, Handler: transport.Handle(n.handleDeleteAcls), // 31
			Why: "The whole schema; each filter is refused SECURITY_DISABLED with no matching ACLs."},
		{Key: kmsg.DescribeConfigs.Int16(), Min: 1, Max: 4, Handler: transport.Handle(n.handleDescribeConfigs), // 32
			Why: "The whole schema: nothing in the window asks for something the facade cannot answer. TOPIC, BROKER, BROKER_LOGGER and GROUP (KIP-848/932 group configs, every one of Kafka 4.2's with its source) resources are described."},
		{Key: kmsg.AlterConfigs.Int16(), Min: 0, Max: 2, Handler: transport.Handle(n.handleAlterConfigs), // 33
			Why: "The whole schema; the deprecated full-replacement form, honoured literally (a key not named returns to its default); a topic config Kafka knows but the facade does not apply is stored and described, not applied, and a name Kafka does not know is refused as Kafka refuses it; topics and GROUP resources."},
		{Key: kmsg.SASLAuthenticate.Int16(), Min: 0, Max: 1, Handler: transport.SASLAuthenticate, // 36
			Why: "Ceiling: v2 is the flexible encoding and adds no field; v1's `session_lifetime_ms` is answered 0 (no re-authentication is asked)."},
		{Key: kmsg.CreatePartitions.Int16(), Min: 0, Max: 3, Handler: transport.Handle(n.handleCreatePartitions), // 37
			Why: "The whole schema. Widening raises the width recorded under qk:topiccfg: (a Queen queue declares none), which the next Metadata reports; a decrease or an equal count is INVALID_PARTITIONS with Kafka's sentences, as is a count past the facade's per-topic ceiling, and a manual assignment is checked as Kafka's controller checks it (one replica list per added partition, registered brokers, the replica count Metadata lists) and, accepted, places nothing."},
		{Key: kmsg.DeleteGroups.Int16(), Min: 0, Max: 3, Handler: transport.Handle(n.handleDeleteGroups), // 42
			Why: "The whole schema: v3 only adds a per-group `error_message`, answered with the error's description (null on success). A share group goes only when empty (NON_EMPTY_GROUP otherwise), with its share-partition states."},
		{Key: kmsg.IncrementalAlterConfigs.Int16(), Min: 0, Max: 1, Handler: transport.Handle(n.handleIncrementalAlterConfigs), // 44
			Why: "The whole schema; retention.ms and cleanup.policy are altered only on a topic this facade created (the write must be lossless), compression.type and max.message.bytes on every topic, every other topic config Kafka knows stored and described, not applied; a GROUP resource's configs with Kafka 4.2's names, bounds and refusals (APPEND and SUBTRACT are INVALID_CONFIG: no group config is a list)."},
		{Key: kmsg.OffsetDelete.Int16(), Min: 0, Max: 0, Handler: transport.Handle(n.handleOffsetDelete), // 47
			Why: "One version; live groups' subscribed topics are refused, as Kafka does."},
		{Key: kmsg.DescribeCluster.Int16(), Min: 0, Max: 2, Handler: transport.Handle(n.handleDescribeCluster), // 60
			Why: "The whole schema: the brokers, cluster id and controller Metadata answers; every node is a broker endpoint (v1: asking for controllers is MISMATCHED_ENDPOINT_TYPE, an unknown type UNSUPPORTED_ENDPOINT_TYPE, both INVALID_REQUEST at v0) and none is ever fenced (v2)."},
		{Key: kmsg.DescribeProducers.Int16(), Min: 0, Max: 0, Handler: transport.Handle(n.handleDescribeProducers), // 61
			Why: "The whole schema: the producers whose sequence window the partition's leader holds (id, epoch, last sequence, when it accepted their last batch); a partition another node leads is NOT_LEADER_OR_FOLLOWER, as in Kafka; coordinator epoch and an open transaction's start offset are -1 (its records take offsets at the commit)."},
		{Key: kmsg.DescribeTransactions.Int16(), Min: 0, Max: 0, Handler: transport.Handle(n.handleDescribeTransactions), // 65
			Why: "The whole schema, with Kafka's state names; any node answers for any transactional id (Kafka: only its coordinator), in cluster mode from the id's qk:txn: row and the partitions its stage holds records of; an id with no producer is TRANSACTIONAL_ID_NOT_FOUND."},
		{Key: kmsg.ListTransactions.Int16(), Min: 0, Max: 2, Handler: transport.Handle(n.handleListTransactions), // 66
			Why: "The whole schema: state and producer id filters, v1's duration filter (open longer than it), v2's transactional id pattern (RE2 syntax, matched against the whole id; one that does not compile is INVALID_REGULAR_EXPRESSION). In cluster mode every node lists the whole fleet's ids from their qk:txn: rows (Kafka: each broker its own)."},
		{Key: kmsg.ConsumerGroupHeartbeat.Int16(), Min: 0, Max: 1, Handler: transport.Handle(n.handleConsumerGroupHeartbeat), // 68
			Why: "The whole schema (KIP-848, the consumer protocol): v1 is what clients need to enable it (KIP-1082's client-generated member id, a server-side `subscribed_topic_regex` in RE2 syntax, re-resolved as topics appear); v0's member id is generated here. Assignments are computed here by `uniform` or `range`, revoked before they move, and the group's epochs and assignments survive an owner move (Queen KV). A non-empty classic group is not converted (GROUP_ID_NOT_FOUND, Kafka's migration policy `disabled`); an empty one is."},
		{Key: kmsg.ConsumerGroupDescribe.Int16(), Min: 0, Max: 1, Handler: transport.Handle(n.handleConsumerGroupDescribe), // 69
			Why: "The whole schema: each member's subscription, assignment and target assignment, topics named by id and name; v1's member type is always `consumer` (no classic members join a consumer group here); `include_authorized_operations` is answered every group operation, as a Kafka broker with no authorizer answers."},
		{Key: kmsg.ShareGroupHeartbeat.Int16(), Min: 1, Max: 1, Handler: transport.Handle(n.handleShareGroupHeartbeat), // 76
			Why: "Kafka 4.2's window (KIP-932): v1 is the stable version, with KIP-1082's client-chosen member id; v0, 4.0's early access, was removed in 4.1 and is not advertised. Every member is assigned every partition of every topic it subscribes to (the simple share assignor as issue 22 chooses; Kafka 4.2's spreads partitions over members). The group's epochs and members survive an owner move (Queen KV); a group id another group type holds is GROUP_ID_NOT_FOUND (\"is not a share group\")."},
		{Key: kmsg.ShareGroupDescribe.Int16(), Min: 1, Max: 1, Handler: transport.Handle(n.handleShareGroupDescribe), // 77
			Why: "Kafka 4.2's window: v1 only (v0 was 4.0's early access). Each member's subscription and assignment, topics named by id and name, the assignor `simple`; states Empty, Stable, and Dead for an id no share group has (GROUP_ID_NOT_FOUND); `include_authorized_operations` is answered every group operation, as a Kafka broker with no authorizer answers."},
		{Key: kmsg.ShareFetch.Int16(), Min: 1, Max: 2, Handler: transport.Handle(n.handleShareFetch), // 78
			Why: "Floor: v0 was KIP-932's early access, removed in Kafka 4.1. Ceiling: v2 (Kafka 4.2), which franz-go's share consumer requires: `share_acquire_mode` record_limit is how every acquisition is made (max_records is never exceeded), and v2's renew acknowledgements (type 4, KIP-1222) restart the holder's lock when `is_renew_ack` is set (a renewing fetch reads nothing; a RENEW without the flag is INVALID_REQUEST for its partition). Any node serves any share-partition (its state changes only by fenced KV writes); topics are named by id; the long poll is Queen's own on partitions waiting for records, with short pauses while only locks stand in the way; the share session cache is per node (2,000, Kafka's default)."},
		{Key: kmsg.ShareAcknowledge.Int16(), Min: 1, Max: 2, Handler: transport.Handle(n.handleShareAcknowledge), // 79
			Why: "As ShareFetch: v1 is Kafka 4.1's stable version, v2 adds `is_renew_ack` (a RENEW restarts the holder's lock; without the flag it is INVALID_REQUEST for its partition) and answers the acquisition lock timeout. Epoch 0 is INVALID_SHARE_SESSION_EPOCH, as in Kafka; -1 closes the session and releases what its member holds."},
		{Key: kmsg.DescribeShareGroupOffsets.Int16(), Min: 0, Max: 1, Handler: transport.Handle(n.handleDescribeShareGroupOffsets), // 90
			Why: "The whole schema (KIP-932), answered by the group's coordinator (NOT_COORDINATOR elsewhere), as Kafka routes it: each partition's share-partition start offset (-1 where the group has no state, or the topic does not exist), every partition with state when no topics are named; v1's lag is Kafka's high watermark minus start offset minus the in-flight records already acknowledged or archived. Leader epochs are -1, as everywhere here."},
		{Key: kmsg.AlterShareGroupOffsets.Int16(), Min: 0, Max: 0, Handler: transport.Handle(n.handleAlterShareGroupOffsets), // 91
			Why: "The whole schema (KIP-932), on the group's coordinator: an empty or new share group's start offsets are set (its in-flight records dropped); members are NON_EMPTY_GROUP, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION per partition."},
		{Key: kmsg.DeleteShareGroupOffsets.Int16(), Min: 0, Max: 0, Handler: transport.Handle(n.handleDeleteShareGroupOffsets), // 92
			Why: "The whole schema (KIP-932), on the group's coordinator: an empty share group's state is forgotten per topic (the next fetch starts afresh from share.auto.offset.reset); members are NON_EMPTY_GROUP, a group with neither members nor state GROUP_ID_NOT_FOUND."},
	}
}
