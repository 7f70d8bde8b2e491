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

func cgJoin(k *kclient, group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version, r.Group, r.MemberID, r.MemberEpoch = 1, group, member, 0
	r.RebalanceTimeoutMillis, r.SubscribedTopicNames = 30_000, topics
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return k.roundTrip(r).(*kmsg.ConsumerGroupHeartbeatResponse)
}

func msgOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestConsumerProtocolOnTheWire drives one KIP-848 group through the wire:
// the join's assignment, the member-epoch checks of OffsetCommit v9 and
// OffsetFetch v9, the classic APIs' answers for a consumer group
// (JoinGroup, ListGroups v5, DescribeGroups), ConsumerGroupDescribe, and the
// id becoming classic again once the group is empty.
func TestConsumerProtocolOnTheWire(t *testing.T) {
	_, addr, _ := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, newAdmin(newKgoClient(t, addr)).CreateTopic(ctx, 4, 1, "cp-wire"))
	k := dial(t, addr)

	j := cgJoin(k, "cp-g", "m1", "cp-wire")
	require.Zero(t, j.ErrorCode, msgOf(j.ErrorMessage))
	require.EqualValues(t, 1, j.MemberEpoch)
	require.EqualValues(t, 5000, j.HeartbeatIntervalMillis)
	require.NotNil(t, j.Assignment)
	require.Len(t, j.Assignment.Topics, 1)
	require.Equal(t, []int32{0, 1, 2, 3}, j.Assignment.Topics[0].Partitions)

	commit := func(version int16, member string, epoch int32) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.MemberID, r.Generation = version, "cp-g", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "cp-wire"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 7
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return k.roundTrip(r).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	require.Zero(t, commit(9, "m1", 1))
	require.Equal(t, kerr.StaleMemberEpoch.Code, commit(9, "m1", 0))
	require.Equal(t, kerr.UnknownMemberID.Code, commit(9, "m9", 1))
	require.Equal(t, kerr.UnsupportedVersion.Code, commit(8, "m1", 1))

	fetch := func(member *string, epoch int32) (int16, int64) {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group, g.MemberID, g.MemberEpoch = "cp-g", member, epoch
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "cp-wire", []int32{0}
		g.Topics = append(g.Topics, gt)
		r.Groups = append(r.Groups, g)
		rg := k.roundTrip(r).(*kmsg.OffsetFetchResponse).Groups[0]
		if rg.ErrorCode != 0 {
			return rg.ErrorCode, -1
		}
		return 0, rg.Topics[0].Partitions[0].Offset
	}
	code, off := fetch(kmsg.StringPtr("m1"), 1)
	require.Zero(t, code)
	require.EqualValues(t, 7, off)
	code, _ = fetch(kmsg.StringPtr("m1"), 3)
	require.Equal(t, kerr.StaleMemberEpoch.Code, code)
	code, off = fetch(nil, -1) // an admin client
	require.Zero(t, code)
	require.EqualValues(t, 7, off)

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version, jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = 3, "cp-g", 30_000, 30_000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 1}
	jg.Protocols = append(jg.Protocols, p)
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, k.roundTrip(jg).(*kmsg.JoinGroupResponse).ErrorCode)

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 5
	lgr := k.roundTrip(lg).(*kmsg.ListGroupsResponse)
	var found *kmsg.ListGroupsResponseGroup
	for i := range lgr.Groups {
		if lgr.Groups[i].Group == "cp-g" {
			found = &lgr.Groups[i]
		}
	}
	require.NotNil(t, found, "%+v", lgr.Groups)
	require.Equal(t, "consumer", found.GroupType)
	require.Equal(t, "consumer", found.ProtocolType)
	require.Equal(t, "Stable", found.GroupState)
	lg.TypesFilter = []string{"Classic"}
	for _, g := range k.roundTrip(lg).(*kmsg.ListGroupsResponse).Groups {
		require.NotEqual(t, "cp-g", g.Group)
	}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 6, []string{"cp-g"}
	d := k.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]
	require.Equal(t, kerr.GroupIDNotFound.Code, d.ErrorCode)
	require.Equal(t, "Group cp-g is not a classic group.", msgOf(d.ErrorMessage))
	dg.Version = 5
	d = k.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]
	require.Zero(t, d.ErrorCode)
	require.Equal(t, "Dead", d.State)

	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Version, cd.Groups = 1, []string{"cp-g", "nope"}
	cdr := k.roundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse)
	g := cdr.Groups[0]
	require.Zero(t, g.ErrorCode)
	require.Equal(t, "Stable", g.State)
	require.EqualValues(t, 1, g.Epoch)
	require.EqualValues(t, 1, g.AssignmentEpoch)
	require.Equal(t, "uniform", g.AssignorName)
	require.Len(t, g.Members, 1)
	require.Equal(t, "m1", g.Members[0].MemberID)
	require.Equal(t, []string{"cp-wire"}, g.Members[0].SubscribedTopics)
	require.Equal(t, "cp-wire", g.Members[0].Assignment.TopicPartitions[0].Topic)
	require.Equal(t, []int32{0, 1, 2, 3}, g.Members[0].TargetAssignment.TopicPartitions[0].Partitions)
	require.EqualValues(t, 1, g.Members[0].MemberType)
	require.Equal(t, kerr.GroupIDNotFound.Code, cdr.Groups[1].ErrorCode)
	require.Equal(t, "Group nope not found.", msgOf(cdr.Groups[1].ErrorMessage))

	// The member leaves: the empty group gives its id back to the classic
	// protocol, and its committed offset stays.
	lv := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	lv.Version, lv.Group, lv.MemberID, lv.MemberEpoch = 1, "cp-g", "m1", -1
	lr := k.roundTrip(lv).(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Zero(t, lr.ErrorCode)
	require.EqualValues(t, -1, lr.MemberEpoch)
	jr := k.roundTrip(jg).(*kmsg.JoinGroupResponse)
	require.Zero(t, jr.ErrorCode)
	code, off = fetch(nil, -1)
	require.Zero(t, code)
	require.EqualValues(t, 7, off)
}

// TestConsumerProtocolRefusesAClassicGroupWithMembers: a heartbeat joining
// a classic group that has members is GROUP_ID_NOT_FOUND (no online
// upgrade of a non-empty group), and an empty one is taken over.
func TestConsumerProtocolRefusesAClassicGroupWithMembers(t *testing.T) {
	_, addr, _ := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, newAdmin(newKgoClient(t, addr)).CreateTopic(ctx, 2, 1, "cp-classic"))
	k := dial(t, addr)
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Version, jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = 3, "cl-g", 30_000, 30_000, "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 1}
	jg.Protocols = append(jg.Protocols, p)
	jr := k.roundTrip(jg).(*kmsg.JoinGroupResponse)
	require.Zero(t, jr.ErrorCode)

	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"cl-g"}
	d := k.roundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	require.Equal(t, kerr.GroupIDNotFound.Code, d.ErrorCode)
	require.Equal(t, "Group cl-g is not a consumer group.", msgOf(d.ErrorMessage))

	r := cgJoin(k, "cl-g", "m1", "cp-classic")
	require.Equal(t, kerr.GroupIDNotFound.Code, r.ErrorCode)
	require.Equal(t, "Cannot upgrade classic group cl-g to consumer group because online upgrade is disabled.", msgOf(r.ErrorMessage))

	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Version, lv.Group, lv.MemberID = 0, "cl-g", jr.MemberID
	require.Zero(t, k.roundTrip(lv).(*kmsg.LeaveGroupResponse).ErrorCode)
	r = cgJoin(k, "cl-g", "m1", "cp-classic")
	require.Zero(t, r.ErrorCode, msgOf(r.ErrorMessage))
	require.EqualValues(t, 1, r.MemberEpoch)
}

// TestDeleteGroupsOfAnEmptyConsumerGroup: a consumer-protocol group whose
// last member left is Empty, not gone (Kafka's consumerGroupFenceMember
// keeps it: an empty group is not downgraded), so DeleteGroups deletes it
// and answers NONE, committed offsets or not; a second delete finds
// nothing. confluent-kafka-go's TestAdminClient_DeleteConsumerGroups, under
// group.protocol=consumer, closes its only consumer (which stored no
// offset) and expects the delete to succeed.
func TestDeleteGroupsOfAnEmptyConsumerGroup(t *testing.T) {
	_, addr, _ := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, newAdmin(newKgoClient(t, addr)).CreateTopic(ctx, 2, 1, "cp-del"))
	k := dial(t, addr)
	deleteGroup := func(id string) int16 {
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version, r.Groups = 2, []string{id}
		return k.roundTrip(r).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
	}
	require.Zero(t, cgJoin(k, "cp-del-g", "m1", "cp-del").ErrorCode)
	require.Equal(t, kerr.NonEmptyGroup.Code, deleteGroup("cp-del-g"))
	lv := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	lv.Version, lv.Group, lv.MemberID, lv.MemberEpoch = 1, "cp-del-g", "m1", -1
	require.Zero(t, k.roundTrip(lv).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)

	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Version, cd.Groups = 1, []string{"cp-del-g"}
	g := k.roundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	require.Zero(t, g.ErrorCode)
	require.Equal(t, "Empty", g.State)

	require.Zero(t, deleteGroup("cp-del-g"))
	require.Equal(t, kerr.GroupIDNotFound.Code, deleteGroup("cp-del-g"))
	g = k.roundTrip(cd).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	require.Equal(t, kerr.GroupIDNotFound.Code, g.ErrorCode)
}
