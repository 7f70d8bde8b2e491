package node

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
)

// TestAuthorizedOperationsAsKafkaWithoutAuthorizer: every describe that
// can be asked for authorized operations answers what a Kafka broker with
// no authorizer answers: every operation the resource type supports
// (AclEntry.supportedOperations as a bit field of AclOperation codes),
// spelled out here code by code; unasked, or for a group described with
// an error, the field keeps the "omitted" sentinel. confluent-kafka-go's
// DescribeCluster, DescribeTopics and DescribeConsumerGroups tests read an
// empty list where a broker without an authorizer gives every operation.
func TestAuthorizedOperationsAsKafkaWithoutAuthorizer(t *testing.T) {
	const (
		// READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
		// DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
		topicOps = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11
		// READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
		groupOps = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11
		// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION 9, DESCRIBE_CONFIGS,
		// ALTER_CONFIGS, IDEMPOTENT_WRITE 12.
		clusterOps = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12
		omitted    = math.MinInt32
	)
	_, addr, _ := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, newAdmin(newKgoClient(t, addr)).CreateTopic(ctx, 2, 1, "ops"))
	k := dial(t, addr)

	for _, ask := range []bool{true, false} {
		want := func(ops int32) int32 {
			if ask {
				return ops
			}
			return omitted
		}

		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations = ask
		require.EqualValues(t, want(clusterOps), k.roundTrip(dc).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations, "DescribeCluster, asked %v", ask)

		for v := int16(8); v <= 13; v++ {
			md := kmsg.NewPtrMetadataRequest()
			md.Version = v
			md.IncludeClusterAuthorizedOperations, md.IncludeTopicAuthorizedOperations = ask, ask
			md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("ops")}, {Topic: kmsg.StringPtr("absent")}}
			r := k.roundTrip(md).(*kmsg.MetadataResponse)
			require.Len(t, r.Topics, 2)
			for _, tp := range r.Topics {
				require.EqualValues(t, want(topicOps), tp.AuthorizedOperations, "Metadata v%d topic %s, asked %v", v, *tp.Topic, ask)
			}
			if v <= 10 { // v11 dropped the cluster's
				require.EqualValues(t, want(clusterOps), r.AuthorizedOperations, "Metadata v%d cluster, asked %v", v, ask)
			}
		}
	}

	// A classic group, a consumer-protocol group and a share group, each
	// described asked and not, beside an id that is no group of its kind.
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version, jg.Group, jg.ProtocolType = 3, "ops-classic", "consumer"
	jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = 10_000, 10_000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	require.Zero(t, k.roundTrip(jg).(*kmsg.JoinGroupResponse).ErrorCode)
	require.Zero(t, cgJoin(k, "ops-cg", "m1", "ops").ErrorCode)
	require.Zero(t, sgHeartbeat(k, "ops-sg", "m1", 0, "ops").ErrorCode)

	for _, ask := range []bool{true, false} {
		want := int32(omitted)
		if ask {
			want = groupOps
		}
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Version, dg.Groups, dg.IncludeAuthorizedOperations = 5, []string{"ops-classic"}, ask
		g := k.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]
		require.Zero(t, g.ErrorCode)
		require.EqualValues(t, want, g.AuthorizedOperations, "DescribeGroups, asked %v", ask)

		cd := kmsg.NewPtrConsumerGroupDescribeRequest()
		cd.Groups, cd.IncludeAuthorizedOperations = []string{"ops-cg", "ops-classic"}, ask
		cr := k.roundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse)
		require.Zero(t, cr.Groups[0].ErrorCode)
		require.EqualValues(t, want, cr.Groups[0].AuthorizedOperations, "ConsumerGroupDescribe, asked %v", ask)
		require.NotZero(t, cr.Groups[1].ErrorCode)
		require.EqualValues(t, omitted, cr.Groups[1].AuthorizedOperations, "ConsumerGroupDescribe of a classic group")

		sd := kmsg.NewPtrShareGroupDescribeRequest()
		sd.Version, sd.GroupIDs, sd.IncludeAuthorizedOperations = 1, []string{"ops-sg", "nope"}, ask
		sr := k.roundTrip(sd).(*kmsg.ShareGroupDescribeResponse)
		require.Zero(t, sr.Groups[0].ErrorCode)
		require.EqualValues(t, want, sr.Groups[0].AuthorizedOperations, "ShareGroupDescribe, asked %v", ask)
		require.NotZero(t, sr.Groups[1].ErrorCode)
		require.EqualValues(t, omitted, sr.Groups[1].AuthorizedOperations, "ShareGroupDescribe of no group")
	}
}
