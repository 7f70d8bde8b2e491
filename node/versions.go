package node

import "github.com/twmb/franz-go/pkg/kmsg"

// apiTable is THE version table: it builds the ApiVersions answer and gates
// every incoming request, so an advertised version is a handled version.
// Windows contain seed 001's support matrix (nothing a seed advertised is
// withdrawn) and go beyond it where an issue says so. One row per API,
// sorted by key number, its reason on the second line; add a row when the
// handler lands, then regenerate the README's matrix:
// go test ./node/ -run TestREADMESupportMatrix -update.
var apiTable = []apiRow{
	{kmsg.Produce.Int16(), 3, 13, handle((*Node).handleProduce), // 0
		"Floor: v3 is the first version whose records are RecordBatch v2. v10's leader hints ride only on NOT_LEADER_OR_FOLLOWER, which Produce never answers; v11's TRANSACTION_ABORTABLE is never needed (v10's codes stand); v12 changes only transactions under `transaction.version` >= 2, never advertised, so AddPartitionsToTxn stays required; v13 names topics by id. Ceiling: kmsg's newest."},
	{kmsg.Fetch.Int16(), 4, 18, handle((*Node).handleFetch), // 1
		"Ceiling: v18 is the newest schema. v7+ fetch sessions (KIP-227) with a per-node cache of 1,000; v13+ topics by id; leader epochs -1 (nothing is fenced or diverges), preferred_read_replica -1; v15–v18 add follower-only fields and leader hints for errors never answered. v4 is the schema's own floor."},
	{kmsg.ListOffsets.Int16(), 1, 11, handle((*Node).handleListOffsets), // 2
		"The whole schema: v7's MAX_TIMESTAMP is exact on the append clock; v8's -4 is the log start, v9's -5 and v11's -6 are -1, as Kafka answers them without tiered storage; v10's timeout only bounds tiered reads. A sentinel below its version is UNSUPPORTED_VERSION, as in Kafka. v1 is the schema's own floor."},
	{kmsg.Metadata.Int16(), 0, 13, handle((*Node).handleMetadata), // 3
		"v10 answers topic ids (the Queen queue's id), v12 takes topics by id, v13's top-level error is always 0 (no rebootstrap is ever asked). Ceiling: kmsg's newest."},
	{kmsg.OffsetCommit.Int16(), 2, 10, handle((*Node).handleOffsetCommit), // 8
		"Kafka's ceiling (4.2): v10 names topics by id, resolved through the catalogue (an id no topic has is UNKNOWN_TOPIC_ID). v7's `group_instance_id` is fenced as Kafka fences it (FENCED_INSTANCE_ID); v9's generation is a classic group's. Floor: v0 and v1 are the ZooKeeper-era offset store."},
	{kmsg.OffsetFetch.Int16(), 1, 10, handle((*Node).handleOffsetFetch), // 9
		"Kafka's ceiling (4.2): v10 names topics by id (an id no topic has is UNKNOWN_TOPIC_ID; an all-topics answer names the committed topics the catalogue has an id for). v8 fetches several groups per request, each answered on its own; v9's member id and epoch belong to KIP-848 groups and, as Kafka does for classic groups, are not checked. v7's `require_stable` is honoured: an open transaction's offsets are not in the store until its commit."},
	{kmsg.FindCoordinator.Int16(), 0, 6, handle((*Node).handleFindCoordinator), // 10
		"The whole schema: v4 batches keys, each answered on its own; v5 only lets the client read TRANSACTION_ABORTABLE; v6's share-group keys are INVALID_REQUEST, as on a broker without a share coordinator. Group and transaction keys resolve to this node in single mode and to the key's rendezvous owner in cluster mode."},
	{kmsg.JoinGroup.Int16(), 0, 9, handle((*Node).handleJoinGroup), // 11
		"Kafka's ceiling: v4 MEMBER_ID_REQUIRED, v5 `group_instance_id` (static membership, KIP-345: a restart inside the session timeout rebalances nothing), v7 the protocol type answered, v8 `reason` (logged), v9 `skip_assignment` for a restarted static leader (KIP-814)."},
	{kmsg.Heartbeat.Int16(), 0, 4, handle((*Node).handleHeartbeat), // 12
		"Kafka's ceiling: v3 `group_instance_id` (a replaced static member is FENCED_INSTANCE_ID), v4 the flexible encoding."},
	{kmsg.LeaveGroup.Int16(), 0, 5, handle((*Node).handleLeaveGroup), // 13
		"Kafka's ceiling: v3 several members per request, each answered its own code, by member id or by instance id alone; v4 the flexible encoding; v5 a reason per member (logged)."},
	{kmsg.SyncGroup.Int16(), 0, 5, handle((*Node).handleSyncGroup), // 14
		"Kafka's ceiling: v3 `group_instance_id`, v4 the flexible encoding, v5 the protocol type and name, checked against the group's and answered."},
	{kmsg.DescribeGroups.Int16(), 0, 6, handle((*Node).handleDescribeGroups), // 15
		"Kafka's ceiling: v4 names each member's `group_instance_id`, v5 is the flexible encoding, v6 (KIP-1043) answers a group that does not exist GROUP_ID_NOT_FOUND with a message where older versions describe it Dead; v3's `include_authorized_operations` is answered with Kafka's omitted sentinel: there is no ACL model."},
	{kmsg.ListGroups.Int16(), 0, 5, handle((*Node).handleListGroups), // 16
		"The whole schema: every group is `classic` (v5's `group_type`), the only protocol served; v4's `states_filter` and v5's `types_filter` are honoured."},
	{kmsg.SASLHandshake.Int16(), 0, 1, handle((*Node).handleSaslHandshake), // 17
		"Both versions: the two SASL flows (raw tokens after v0, SaslAuthenticate after v1)."},
	{kmsg.ApiVersions.Int16(), 0, 5, handle((*Node).handleApiVersions), // 18
		"The whole schema: no features are advertised at any version (v4 only changes how they may be), and v5's cluster and node ids are checked against Metadata's, REBOOTSTRAP_REQUIRED on a misrouted connection. Versions above the window get the v0 fallback."},
	{kmsg.CreateTopics.Int16(), 2, 7, handle((*Node).handleCreateTopics), // 19
		"v4 lets -1 mean 'you choose', v5 carries the created topic's configs back, v6 understands THROTTLING_QUOTA_EXCEEDED, v7 answers the new queue's id. Ceiling: kmsg's newest."},
	{kmsg.DeleteTopics.Int16(), 1, 6, handle((*Node).handleDeleteTopics), // 20
		"v5 adds `error_message`, v6 names topics by name or id (an unknown id is UNKNOWN_TOPIC_ID). Ceiling: kmsg's newest."},
	{kmsg.InitProducerID.Int16(), 0, 5, handle((*Node).handleInitProducerID), // 22
		"The whole schema kmsg knows: v5 only lets the client read TRANSACTION_ABORTABLE (KIP-890), which InitProducerId never answers, here or in Kafka; transaction protocol 2 is the `transaction.version` feature, never advertised. v3 is KIP-360's epoch bump, which turns a lost sequence window into a reset the producer recovers from."},
	{kmsg.OffsetForLeaderEpoch.Int16(), 0, 4, handle((*Node).handleOffsetForLeaderEpoch), // 23
		"The whole schema: every partition has one leader epoch, -1, whose end offset is the high watermark; any other epoch is undefined (-1/-1). current_leader_epoch is not fenced, as ListOffsets does not: the epoch never changes."},
	{kmsg.AddPartitionsToTxn.Int16(), 0, 3, handle((*Node).handleAddPartitionsToTxn), // 24
		"Ceiling: v4 is a different request (KIP-890's broker-to-broker verification), never sent by a client."},
	{kmsg.AddOffsetsToTxn.Int16(), 0, 3, handle((*Node).handleAddOffsetsToTxn), // 25
		"Ceiling: v4 exists for KIP-890's transaction protocol 2, in which clients stop sending this API."},
	{kmsg.EndTxn.Int16(), 0, 3, handle((*Node).handleEndTxn), // 26
		"Ceiling: v5's answer carries the protocol-2 epoch bump this facade does not perform; v4 is the step on the way to it."},
	{kmsg.TxnOffsetCommit.Int16(), 0, 3, handle((*Node).handleTxnOffsetCommit), // 28
		"Floor: kafka-clients' builder throws below v3 whenever group metadata is set (every KIP-447 loop). Ceiling: the transaction-protocol-2 bump. v3's `group_instance_id` is fenced as OffsetCommit's is."},
	{kmsg.DescribeACLs.Int16(), 1, 3, handle((*Node).handleDescribeAcls), // 29
		"The whole schema; every answer is SECURITY_DISABLED, as a Kafka broker with no authorizer answers."},
	{kmsg.CreateACLs.Int16(), 1, 3, handle((*Node).handleCreateAcls), // 30
		"The whole schema; each creation is refused SECURITY_DISABLED."},
	{kmsg.DeleteACLs.Int16(), 1, 3, handle((*Node).handleDeleteAcls), // 31
		"The whole schema; each filter is refused SECURITY_DISABLED with no matching ACLs."},
	{kmsg.DescribeConfigs.Int16(), 1, 4, handle((*Node).handleDescribeConfigs), // 32
		"The whole schema: nothing in the window asks for something the facade cannot answer."},
	{kmsg.AlterConfigs.Int16(), 0, 2, handle((*Node).handleAlterConfigs), // 33
		"The whole schema; the deprecated full-replacement form, honoured literally."},
	{kmsg.SASLAuthenticate.Int16(), 0, 1, handle((*Node).handleSaslAuthenticate), // 36
		"Ceiling: v2 is the flexible encoding and adds no field; v1's `session_lifetime_ms` is answered 0."},
	{kmsg.CreatePartitions.Int16(), 0, 3, handle((*Node).handleCreatePartitions), // 37
		"The whole schema. An increase is refused: Queen declares a topic's width once, at CreateTopics."},
	{kmsg.DeleteGroups.Int16(), 0, 3, handle((*Node).handleDeleteGroups), // 42
		"The whole schema: v3 only adds a per-group `error_message`, answered with the error's description (null on success)."},
	{kmsg.IncrementalAlterConfigs.Int16(), 0, 1, handle((*Node).handleIncrementalAlterConfigs), // 44
		"The whole schema; retention.ms and cleanup.policy are altered only on a topic this facade created (the write must be lossless), compression.type and max.message.bytes on every topic."},
	{kmsg.OffsetDelete.Int16(), 0, 0, handle((*Node).handleOffsetDelete), // 47
		"One version; live groups' subscribed topics are refused, as Kafka does."},
	{kmsg.DescribeCluster.Int16(), 0, 2, handle((*Node).handleDescribeCluster), // 60
		"The whole schema: the brokers, cluster id and controller Metadata answers; every node is a broker endpoint (v1) and none is ever fenced (v2)."},
}

// apiIndex and advertised are apiTable keyed by API key and as the
// ApiVersions answer. They are built in init because the ApiVersions
// handler is itself a row of the table.
var (
	apiIndex   map[int16]apiRow
	advertised []kmsg.ApiVersionsResponseApiKey
)

func init() {
	apiIndex = make(map[int16]apiRow, len(apiTable))
	for _, r := range apiTable {
		apiIndex[r.key] = r
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = r.key, r.min, r.max
		advertised = append(advertised, k)
	}
}

// rowFor returns the table row of key.
func rowFor(key int16) (apiRow, bool) {
	r, ok := apiIndex[key]
	return r, ok
}
