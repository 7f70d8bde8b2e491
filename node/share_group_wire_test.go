package node

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
)

func sgHeartbeat(k *kclient, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.Version, r.GroupID, r.MemberID, r.MemberEpoch = 1, group, member, epoch
	if topics != nil {
		r.SubscribedTopicNames = topics
	}
	return k.roundTrip(r).(*kmsg.ShareGroupHeartbeatResponse)
}

// TestShareGroupOnTheWire drives one share group through the wire with raw
// requests: the join's assignment (every partition), a second member,
// ShareGroupDescribe, ListGroups v5's share type, the other group APIs'
// answers for a share group's id and a share heartbeat naming a classic
// group, then DeleteGroups (refused while members remain).
func TestShareGroupOnTheWire(t *testing.T) {
	_, addr, _ := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, newAdmin(newKgoClient(t, addr)).CreateTopic(ctx, 3, 1, "sg-wire"))
	k := dial(t, addr)

	j := sgHeartbeat(k, "sg", "m1", 0, "sg-wire")
	require.Zero(t, j.ErrorCode, msgOf(j.ErrorMessage))
	require.EqualValues(t, 1, j.MemberEpoch)
	require.Equal(t, "m1", *j.MemberID)
	require.EqualValues(t, 5000, j.HeartbeatIntervalMillis)
	require.NotNil(t, j.Assignment)
	require.Len(t, j.Assignment.TopicPartitions, 1)
	require.Equal(t, []int32{0, 1, 2}, j.Assignment.TopicPartitions[0].Partitions)
	j2 := sgHeartbeat(k, "sg", "m2", 0, "sg-wire")
	require.EqualValues(t, 2, j2.MemberEpoch)
	require.Equal(t, []int32{0, 1, 2}, j2.Assignment.TopicPartitions[0].Partitions)
	h := sgHeartbeat(k, "sg", "m1", 1)
	require.Zero(t, h.ErrorCode)
	require.EqualValues(t, 2, h.MemberEpoch)
	require.Equal(t, kerr.FencedMemberEpoch.Code, sgHeartbeat(k, "sg", "m1", 5).ErrorCode)

	dr := kmsg.NewPtrShareGroupDescribeRequest()
	dr.Version, dr.GroupIDs = 1, []string{"sg", "nope"}
	d := k.roundTrip(dr).(*kmsg.ShareGroupDescribeResponse)
	require.Zero(t, d.Groups[0].ErrorCode)
	require.Equal(t, "Stable", d.Groups[0].GroupState)
	require.Equal(t, "simple", d.Groups[0].Assignor)
	require.EqualValues(t, 2, d.Groups[0].GroupEpoch)
	require.Len(t, d.Groups[0].Members, 2)
	require.Equal(t, "sg-wire", d.Groups[0].Members[0].Assignment.TopicPartitions[0].Topic)
	require.Equal(t, kerr.GroupIDNotFound.Code, d.Groups[1].ErrorCode)

	lr := kmsg.NewPtrListGroupsRequest()
	lr.Version, lr.TypesFilter = 5, []string{"share"}
	l := k.roundTrip(lr).(*kmsg.ListGroupsResponse)
	require.Len(t, l.Groups, 1)
	require.Equal(t, "sg", l.Groups[0].Group)
	require.Equal(t, "share", l.Groups[0].GroupType)
	require.Equal(t, "share", l.Groups[0].ProtocolType)
	require.Equal(t, "Stable", l.Groups[0].GroupState)

	// The other group APIs naming the share group, as Kafka 4.2 answers.
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version, jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = 9, "sg", "consumer", 30_000, 30_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	jg.Protocols = append(jg.Protocols, p)
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, k.roundTrip(jg).(*kmsg.JoinGroupResponse).ErrorCode)
	cg := cgJoin(k, "sg", "c1", "sg-wire")
	require.Equal(t, kerr.GroupIDNotFound.Code, cg.ErrorCode)
	require.Equal(t, "Group sg is not a consumer group.", msgOf(cg.ErrorMessage))
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 9, "sg", -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.Partitions = "sg-wire", []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
	oc.Topics = append(oc.Topics, rt)
	require.Equal(t, kerr.GroupIDNotFound.Code, k.roundTrip(oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 9
	ofg := kmsg.NewOffsetFetchRequestGroup()
	ofg.Group = "sg"
	of.Groups = append(of.Groups, ofg)
	require.Equal(t, kerr.GroupIDNotFound.Code, k.roundTrip(of).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 6, []string{"sg"}
	dgr := k.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]
	require.Equal(t, kerr.GroupIDNotFound.Code, dgr.ErrorCode)
	require.Equal(t, "Group sg is not a classic group.", msgOf(dgr.ErrorMessage))

	// A share heartbeat naming a consumer group's id.
	require.Zero(t, cgJoin(k, "cg", "c1", "sg-wire").ErrorCode)
	s := sgHeartbeat(k, "cg", "m1", 0, "sg-wire")
	require.Equal(t, kerr.GroupIDNotFound.Code, s.ErrorCode)
	require.Equal(t, "Group cg is not a share group.", msgOf(s.ErrorMessage))

	del := func() int16 {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version, r.Groups = 2, []string{"sg"}
		return k.roundTrip(r).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
	}
	require.Equal(t, kerr.NonEmptyGroup.Code, del())
	require.Zero(t, sgHeartbeat(k, "sg", "m1", -1).ErrorCode)
	require.Zero(t, sgHeartbeat(k, "sg", "m2", -1).ErrorCode)
	lr.StatesFilter = []string{"Empty"}
	require.Len(t, k.roundTrip(lr).(*kmsg.ListGroupsResponse).Groups, 1)
	require.Zero(t, del())
	d = k.roundTrip(dr).(*kmsg.ShareGroupDescribeResponse)
	require.Equal(t, kerr.GroupIDNotFound.Code, d.Groups[0].ErrorCode)
	// The id is free again: a classic group may take it.
	require.NotEqual(t, kerr.InconsistentGroupProtocol.Code, k.roundTrip(jg).(*kmsg.JoinGroupResponse).ErrorCode)
}
