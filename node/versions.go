package node

import "github.com/twmb/franz-go/pkg/kmsg"

// apiTable is THE version table: it builds the ApiVersions answer and gates
// every incoming request, so an advertised version is a handled version.
// Windows are seed 001's support matrix. One row per line, sorted by API
// key number; add a row when the handler lands.
var apiTable = []apiRow{
	{kmsg.Produce.Int16(), 3, 9, handle((*Node).handleProduce)},                                 // 0
	{kmsg.Fetch.Int16(), 4, 6, handle((*Node).handleFetch)},                                     // 1
	{kmsg.ListOffsets.Int16(), 1, 5, handle((*Node).handleListOffsets)},                         // 2
	{kmsg.Metadata.Int16(), 0, 9, handle((*Node).handleMetadata)},                               // 3
	{kmsg.OffsetCommit.Int16(), 2, 6, handle((*Node).handleOffsetCommit)},                       // 8
	{kmsg.OffsetFetch.Int16(), 1, 7, handle((*Node).handleOffsetFetch)},                         // 9
	{kmsg.FindCoordinator.Int16(), 0, 3, handle((*Node).handleFindCoordinator)},                 // 10
	{kmsg.JoinGroup.Int16(), 0, 4, handle((*Node).handleJoinGroup)},                             // 11
	{kmsg.Heartbeat.Int16(), 0, 2, handle((*Node).handleHeartbeat)},                             // 12
	{kmsg.LeaveGroup.Int16(), 0, 2, handle((*Node).handleLeaveGroup)},                           // 13
	{kmsg.SyncGroup.Int16(), 0, 2, handle((*Node).handleSyncGroup)},                             // 14
	{kmsg.DescribeGroups.Int16(), 0, 3, handle((*Node).handleDescribeGroups)},                   // 15
	{kmsg.ListGroups.Int16(), 0, 4, handle((*Node).handleListGroups)},                           // 16
	{kmsg.SASLHandshake.Int16(), 0, 1, handle((*Node).handleSaslHandshake)},                     // 17
	{kmsg.ApiVersions.Int16(), 0, 3, handle((*Node).handleApiVersions)},                         // 18
	{kmsg.CreateTopics.Int16(), 2, 6, handle((*Node).handleCreateTopics)},                       // 19
	{kmsg.DeleteTopics.Int16(), 1, 5, handle((*Node).handleDeleteTopics)},                       // 20
	{kmsg.InitProducerID.Int16(), 0, 4, handle((*Node).handleInitProducerID)},                   // 22
	{kmsg.AddPartitionsToTxn.Int16(), 0, 3, handle((*Node).handleAddPartitionsToTxn)},           // 24
	{kmsg.AddOffsetsToTxn.Int16(), 0, 3, handle((*Node).handleAddOffsetsToTxn)},                 // 25
	{kmsg.EndTxn.Int16(), 0, 3, handle((*Node).handleEndTxn)},                                   // 26
	{kmsg.TxnOffsetCommit.Int16(), 0, 3, handle((*Node).handleTxnOffsetCommit)},                 // 28
	{kmsg.DescribeACLs.Int16(), 1, 3, handle((*Node).handleDescribeAcls)},                       // 29
	{kmsg.CreateACLs.Int16(), 1, 3, handle((*Node).handleCreateAcls)},                           // 30
	{kmsg.DeleteACLs.Int16(), 1, 3, handle((*Node).handleDeleteAcls)},                           // 31
	{kmsg.DescribeConfigs.Int16(), 1, 4, handle((*Node).handleDescribeConfigs)},                 // 32
	{kmsg.AlterConfigs.Int16(), 0, 2, handle((*Node).handleAlterConfigs)},                       // 33
	{kmsg.SASLAuthenticate.Int16(), 0, 1, handle((*Node).handleSaslAuthenticate)},               // 36
	{kmsg.CreatePartitions.Int16(), 0, 3, handle((*Node).handleCreatePartitions)},               // 37
	{kmsg.DeleteGroups.Int16(), 0, 2, handle((*Node).handleDeleteGroups)},                       // 42
	{kmsg.IncrementalAlterConfigs.Int16(), 0, 1, handle((*Node).handleIncrementalAlterConfigs)}, // 44
	{kmsg.OffsetDelete.Int16(), 0, 0, handle((*Node).handleOffsetDelete)},                       // 47
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
