package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen/dev"
)

// Raw requests at the boundary versions no client in the suite sends
// as such: LeaveGroup v3 removing several members (one by instance id
// alone) with a code each and v0's folded code; OffsetFetch v8 for
// several groups at once.
func TestGroupAPIsAtBoundaryVersionsOnTheWire(t *testing.T) {
	_, addr, _ := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := newAdmin(newKgoClient(t, addr)).CreateTopic(ctx, 2, 1, "raw-in")
	require.NoError(t, err)

	join := func(k *kclient, member, instance string) *kmsg.JoinGroupResponse {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Version, r.Group, r.MemberID, r.InstanceID = 5, "raw-g", member, kmsg.StringPtr(instance)
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = 30_000, 30_000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 1}
		r.Protocols = append(r.Protocols, p)
		return k.roundTrip(r).(*kmsg.JoinGroupResponse)
	}
	sync := func(k *kclient, member, instance string, gen int32) int16 {
		r := kmsg.NewPtrSyncGroupRequest()
		r.Version, r.Group, r.MemberID, r.InstanceID, r.Generation = 3, "raw-g", member, kmsg.StringPtr(instance), gen
		return k.roundTrip(r).(*kmsg.SyncGroupResponse).ErrorCode
	}
	kx, ky, kadmin := dial(t, addr), dial(t, addr), dial(t, addr)
	x := join(kx, "", "x")
	require.Zero(t, x.ErrorCode, "a static member's first join is admitted at once")
	require.True(t, strings.HasPrefix(x.MemberID, "x-"))
	require.Zero(t, sync(kx, x.MemberID, "x", x.Generation))

	// y joins (parked until x rejoins), x rejoins: one generation of two.
	ych := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ych <- join(ky, "", "y") }()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.InstanceID, hb.Generation = 3, "raw-g", x.MemberID, kmsg.StringPtr("x"), x.Generation
	require.Eventually(t, func() bool {
		return kx.roundTrip(hb).(*kmsg.HeartbeatResponse).ErrorCode == kerr.RebalanceInProgress.Code
	}, 10*time.Second, 10*time.Millisecond)
	x2 := join(kx, x.MemberID, "x")
	y := <-ych
	require.Zero(t, x2.ErrorCode)
	require.Zero(t, y.ErrorCode)
	ysync := make(chan int16, 1)
	go func() { ysync <- sync(ky, y.MemberID, "y", y.Generation) }()
	require.Zero(t, sync(kx, x.MemberID, "x", x2.Generation))
	require.Zero(t, <-ysync)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 3, "raw-g"
	for _, m := range []struct {
		id   string
		inst *string
	}{{x.MemberID, kmsg.StringPtr("x")}, {"", kmsg.StringPtr("y")}, {"ghost", nil}, {"", kmsg.StringPtr("z")}} {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID, lm.InstanceID = m.id, m.inst
		leave.Members = append(leave.Members, lm)
	}
	lr := kadmin.roundTrip(leave).(*kmsg.LeaveGroupResponse)
	require.Zero(t, lr.ErrorCode)
	require.Len(t, lr.Members, 4)
	var codes []int16
	for i, m := range lr.Members {
		require.Equal(t, leave.Members[i].MemberID, m.MemberID)
		require.Equal(t, leave.Members[i].InstanceID, m.InstanceID)
		codes = append(codes, m.ErrorCode)
	}
	require.Equal(t, []int16{0, 0, kerr.UnknownMemberID.Code, kerr.UnknownMemberID.Code}, codes)
	v0 := kmsg.NewPtrLeaveGroupRequest()
	v0.Version, v0.Group, v0.MemberID = 0, "raw-g", "ghost"
	require.Equal(t, kerr.UnknownMemberID.Code, kadmin.roundTrip(v0).(*kmsg.LeaveGroupResponse).ErrorCode)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = 4, []string{"raw-g"}
	d := kadmin.roundTrip(dg).(*kmsg.DescribeGroupsResponse).Groups[0]
	require.Equal(t, "Empty", d.State, "both members left at once")

	// OffsetFetch v8: several groups, each answered on its own.
	for g, off := range map[string]int64{"raw-a": 3, "raw-b": 7} {
		c := kmsg.NewPtrOffsetCommitRequest()
		c.Version, c.Group, c.Generation = 8, g, -1
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = "raw-in"
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = 1, off
		ct.Partitions = append(ct.Partitions, cp)
		c.Topics = append(c.Topics, ct)
		cr := kadmin.roundTrip(c).(*kmsg.OffsetCommitResponse)
		require.Zero(t, cr.Topics[0].Partitions[0].ErrorCode)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 8
	for _, g := range []string{"raw-a", "raw-b", "raw-none"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = "raw-in", []int32{0, 1}
		rg.Topics = append(rg.Topics, rt)
		of.Groups = append(of.Groups, rg)
	}
	fr := kadmin.roundTrip(of).(*kmsg.OffsetFetchResponse)
	got := map[string][]int64{}
	for _, g := range fr.Groups {
		require.Zero(t, g.ErrorCode)
		for _, p := range g.Topics[0].Partitions {
			got[g.Group] = append(got[g.Group], p.Offset)
		}
	}
	require.Equal(t, map[string][]int64{"raw-a": {-1, 3}, "raw-b": {-1, 7}, "raw-none": {-1, -1}}, got)
}

// OffsetCommit v10 and OffsetFetch v10 name topics by id: committed and
// read back by id, every committed topic named by id in an all-topics
// fetch, and an id no topic has answered UNKNOWN_TOPIC_ID on each of its
// partitions (nothing written for it).
func TestOffsetsByTopicIDOnTheWire(t *testing.T) {
	_, addr, obs := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := newAdmin(newKgoClient(t, addr))
	err := adm.CreateTopic(ctx, 2, 1, "byid-in")
	require.NoError(t, err)
	var id [16]byte
	require.Eventually(t, func() bool {
		td, err := adm.ListTopics(ctx, "byid-in")
		if err != nil {
			return false
		}
		id = td["byid-in"].ID
		return id != [16]byte{}
	}, 30*time.Second, 20*time.Millisecond, "the topic has an id")
	ghost := [16]byte{0xde, 0xad}
	k := dial(t, addr)

	c := kmsg.NewPtrOffsetCommitRequest()
	c.Version, c.Group, c.Generation = 10, "byid-g", -1
	for _, tid := range [][16]byte{id, ghost} {
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.TopicID = tid
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = 1, 42
		ct.Partitions = append(ct.Partitions, cp)
		c.Topics = append(c.Topics, ct)
	}
	cr := k.roundTrip(c).(*kmsg.OffsetCommitResponse)
	require.Len(t, cr.Topics, 2)
	require.Equal(t, id, cr.Topics[0].TopicID)
	require.Zero(t, cr.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, ghost, cr.Topics[1].TopicID)
	require.Equal(t, kerr.UnknownTopicID.Code, cr.Topics[1].Partitions[0].ErrorCode)

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 10
	byID := kmsg.NewOffsetFetchRequestGroup()
	byID.Group = "byid-g"
	for _, tid := range [][16]byte{id, ghost} {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.TopicID, rt.Partitions = tid, []int32{0, 1}
		byID.Topics = append(byID.Topics, rt)
	}
	all := kmsg.NewOffsetFetchRequestGroup()
	all.Group = "byid-g" // Topics nil: every committed topic
	of.Groups = append(of.Groups, byID, all)
	fr := k.roundTrip(of).(*kmsg.OffsetFetchResponse)
	require.Len(t, fr.Groups, 2)
	g := fr.Groups[0]
	require.Zero(t, g.ErrorCode)
	require.Len(t, g.Topics, 2)
	require.Equal(t, id, g.Topics[0].TopicID)
	require.Equal(t, []int64{-1, 42}, []int64{g.Topics[0].Partitions[0].Offset, g.Topics[0].Partitions[1].Offset})
	require.Equal(t, ghost, g.Topics[1].TopicID)
	for _, p := range g.Topics[1].Partitions {
		require.Equal(t, kerr.UnknownTopicID.Code, p.ErrorCode)
	}
	a := fr.Groups[1]
	require.Zero(t, a.ErrorCode)
	require.Len(t, a.Topics, 1, "only the committed topic, by its id")
	require.Equal(t, id, a.Topics[0].TopicID)
	require.Len(t, a.Topics[0].Partitions, 1)
	require.Equal(t, int64(42), a.Topics[0].Partitions[0].Offset)

	// franz-go (kadm's requests, newAdmin) commits and reads back at v10, by id.
	var offs adminOffsets
	offs.Add(adminOffset{Topic: "byid-in", Partition: 0, At: 7, LeaderEpoch: -1})
	committed, err := adm.CommitOffsets(ctx, "byid-kadm", offs)
	require.NoError(t, err)
	require.NoError(t, committed.Error())
	got, err := adm.FetchOffsets(ctx, "byid-kadm")
	require.NoError(t, err)
	o, ok := got.Lookup("byid-in", 0)
	require.True(t, ok)
	require.Equal(t, int64(7), o.At)
	versions := map[int16]int16{}
	for _, r := range obs.requests() {
		if r.key == kmsg.OffsetCommit.Int16() || r.key == kmsg.OffsetFetch.Int16() {
			versions[r.key] = max(versions[r.key], r.version)
		}
	}
	require.Equal(t, map[int16]int16{kmsg.OffsetCommit.Int16(): 10, kmsg.OffsetFetch.Int16(): 10}, versions)
}
