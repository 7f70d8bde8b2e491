package transport

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestResponseErrorCode: the first non-zero code, the top level before
// what it holds, for the hand-read APIs and the walked ones alike.
func TestResponseErrorCode(t *testing.T) {
	require.Equal(t, int16(0), responseErrorCode(nil))

	fetch := kmsg.NewPtrFetchResponse()
	fetch.Topics = []kmsg.FetchResponseTopic{{Partitions: []kmsg.FetchResponseTopicPartition{{}, {ErrorCode: kerr.OffsetOutOfRange.Code}}}}
	require.Equal(t, kerr.OffsetOutOfRange.Code, responseErrorCode(fetch))
	fetch.ErrorCode = kerr.FetchSessionIDNotFound.Code
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, responseErrorCode(fetch))
	require.Equal(t, walkedErrorCode(fetch), responseErrorCode(fetch), "the hand read agrees with the walk")

	produce := kmsg.NewPtrProduceResponse()
	produce.Topics = []kmsg.ProduceResponseTopic{{Partitions: []kmsg.ProduceResponseTopicPartition{{}, {ErrorCode: kerr.NotLeaderForPartition.Code}}}}
	require.Equal(t, kerr.NotLeaderForPartition.Code, responseErrorCode(produce))
	require.Equal(t, walkedErrorCode(produce), responseErrorCode(produce), "the hand read agrees with the walk")

	meta := kmsg.NewPtrMetadataResponse()
	require.Equal(t, int16(0), responseErrorCode(meta))
	meta.Topics = []kmsg.MetadataResponseTopic{{}, {Partitions: []kmsg.MetadataResponseTopicPartition{{ErrorCode: kerr.LeaderNotAvailable.Code}}}}
	require.Equal(t, kerr.LeaderNotAvailable.Code, responseErrorCode(meta))

	join := kmsg.NewPtrJoinGroupResponse()
	join.ErrorCode = kerr.RebalanceInProgress.Code
	require.Equal(t, kerr.RebalanceInProgress.Code, responseErrorCode(join))

	commit := kmsg.NewPtrOffsetCommitResponse()
	commit.Topics = []kmsg.OffsetCommitResponseTopic{{Partitions: []kmsg.OffsetCommitResponseTopicPartition{{ErrorCode: kerr.IllegalGeneration.Code}}}}
	require.Equal(t, kerr.IllegalGeneration.Code, responseErrorCode(commit))
}
