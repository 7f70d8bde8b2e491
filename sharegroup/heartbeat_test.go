package sharegroup

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/sharepartition"
)

func TestJoinAssignsEveryPartitionToEveryMember(t *testing.T) {
	e := newEnv(t)
	a := e.topics.add("a", 3)
	b := e.topics.add("b", 2)
	r1 := e.join("m1", "a", "b")
	if r1.ErrorCode != 0 || r1.MemberEpoch != 1 || *r1.MemberID != "m1" || r1.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", r1)
	}
	want := parts{a: all(3), b: all(2)}
	if got := assigned(r1); !got.equal(want) {
		t.Fatalf("assignment %v, want %v", got, want)
	}
	r2 := e.join("m2", "a")
	if r2.ErrorCode != 0 || r2.MemberEpoch != 2 || !assigned(r2).equal(parts{a: all(3)}) {
		t.Fatalf("second join: %+v %v", r2, assigned(r2))
	}
	// m1 moves to epoch 2 at its next heartbeat; its assignment did not
	// change, so the answer carries none.
	h := e.hb("m1", 1)
	if h.ErrorCode != 0 || h.MemberEpoch != 2 || h.Assignment != nil {
		t.Fatalf("heartbeat: %+v", h)
	}
	// A topic that grows bumps the epoch and reassigns.
	e.topics.add("a", 4)
	e.clock.Advance(topicRefresh)
	h = e.hb("m1", 2)
	if h.MemberEpoch != 3 || !assigned(h).equal(parts{a: all(4), b: all(2)}) {
		t.Fatalf("after growth: %+v %v", h, assigned(h))
	}
}

func TestHeartbeatValidation(t *testing.T) {
	e := newEnv(t)
	e.topics.add("a", 1)
	rack := " "
	cases := []struct {
		name string
		req  *kmsg.ShareGroupHeartbeatRequest
		code int16
		msg  string
	}{
		{"no member id", hbReq("g", "", 0, "a"), kerr.InvalidRequest.Code, "MemberId can't be empty."},
		{"no group", hbReq(" ", "m", 0, "a"), kerr.InvalidRequest.Code, "GroupId can't be empty."},
		{"join without topics", hbReq("g", "m", 0), kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request."},
		{"bad epoch", hbReq("g", "m", -2), kerr.InvalidRequest.Code, "MemberEpoch is invalid."},
		{"unknown group", hbReq("nope", "m", 3), kerr.GroupIDNotFound.Code, "Share group nope not found."},
	}
	blankRack := hbReq("g", "m", 0, "a")
	blankRack.RackID = &rack
	cases = append(cases, struct {
		name string
		req  *kmsg.ShareGroupHeartbeatRequest
		code int16
		msg  string
	}{"blank rack", blankRack, kerr.InvalidRequest.Code, "RackId can't be empty."})
	for _, c := range cases {
		r := e.on(e.m, c.req)
		if r.ErrorCode != c.code || r.ErrorMessage == nil || *r.ErrorMessage != c.msg {
			t.Errorf("%s: %d %v, want %d %q", c.name, r.ErrorCode, r.ErrorMessage, c.code, c.msg)
		}
	}
}

func TestEpochFencing(t *testing.T) {
	e := newEnv(t)
	e.topics.add("a", 2)
	e.join("m1", "a") // epoch 1
	e.join("m2", "a") // group epoch 2
	if r := e.hb("m1", 1); r.MemberEpoch != 2 {
		t.Fatalf("m1 at %d", r.MemberEpoch)
	}
	// One behind (the answer with the new epoch was lost) is let through.
	if r := e.hb("m1", 1); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("previous epoch: %+v", r)
	}
	if r := e.hb("m1", 3); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("epoch ahead: %+v", r)
	}
	e.join("m3", "a") // group epoch 3
	e.hb("m1", 2)     // m1 at 3, previous 2
	if r := e.hb("m1", 1); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("two behind: %+v", r)
	}
	if r := e.hb("zz", 3); r.ErrorCode != kerr.UnknownMemberID.Code || *r.ErrorMessage != "Member zz is not a member of group g." {
		t.Fatalf("unknown member: %+v", r)
	}
}

func TestLeaveAndSessionExpiry(t *testing.T) {
	e := newEnv(t)
	e.topics.add("a", 1)
	e.join("m1", "a")
	e.join("m2", "a")
	r := e.on(e.m, hbReq("g", "m1", -1))
	if r.ErrorCode != 0 || r.MemberEpoch != -1 || *r.MemberID != "m1" {
		t.Fatalf("leave: %+v", r)
	}
	if got := e.goneCalls(); !slices.Equal(got, []string{"g/m1"}) {
		t.Fatalf("OnMemberGone %v", got)
	}
	if r := e.on(e.m, hbReq("g", "m1", -1)); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("second leave: %+v", r)
	}
	if r := e.hb("m1", 2); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("left member heartbeat: %+v", r)
	}
	// m2 keeps heartbeating within its session; then stops.
	e.clock.Advance(30 * time.Second)
	if r := e.hb("m2", 2); r.ErrorCode != 0 || r.MemberEpoch != 3 {
		t.Fatalf("m2: %+v", r)
	}
	e.clock.Advance(30 * time.Second)
	if got := e.goneCalls(); len(got) != 1 {
		t.Fatalf("fenced early: %v", got)
	}
	e.clock.Advance(16 * time.Second)
	if got := e.goneCalls(); !slices.Equal(got, []string{"g/m1", "g/m2"}) {
		t.Fatalf("OnMemberGone after expiry %v", got)
	}
	if r := e.hb("m2", 3); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("fenced member answered: %+v", r)
	}
	if c := e.m.Member(context.Background(), e.kv, "g", "m2"); c != kerr.UnknownMemberID.Code {
		t.Fatalf("Member of a fenced member: %d", c)
	}
	// The group stays, Empty, at the epoch its last fence left.
	ok, empty, err := e.m.State(context.Background(), e.kv, "g")
	if !ok || !empty || err != nil {
		t.Fatalf("State %v %v %v", ok, empty, err)
	}
	if r := e.join("m3", "a"); r.MemberEpoch != 5 {
		t.Fatalf("rejoin epoch %d, want 5", r.MemberEpoch)
	}
}

func TestMaxSize(t *testing.T) {
	e := newEnv(t)
	e.m = New(Config{Clock: e.clock, MaxSize: 2, Log: e.m.log})
	e.topics.add("a", 1)
	e.join("m1", "a")
	e.join("m2", "a")
	r := e.join("m3", "a")
	if r.ErrorCode != kerr.GroupMaxSizeReached.Code || *r.ErrorMessage != "The share group has reached its maximum capacity of 2 members." {
		t.Fatalf("third: %+v", r)
	}
	if r := e.hb("m1", 1); r.ErrorCode != 0 {
		t.Fatalf("existing member refused: %+v", r)
	}
}

func TestRejoinKeepsMember(t *testing.T) {
	e := newEnv(t)
	a := e.topics.add("a", 2)
	e.join("m1", "a")
	r := e.join("m1", "a")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || !assigned(r).equal(parts{a: all(2)}) {
		t.Fatalf("rejoin: %+v", r)
	}
}

func TestSubscriptionChangeAndUnknownTopic(t *testing.T) {
	e := newEnv(t)
	a := e.topics.add("a", 2)
	r := e.join("m1", "missing")
	if r.ErrorCode != 0 || len(assigned(r)) != 0 || r.Assignment == nil {
		t.Fatalf("join to a missing topic: %+v", r)
	}
	req := hbReq("g", "m1", 1, "a")
	r = e.on(e.m, req)
	if r.MemberEpoch != 2 || !assigned(r).equal(parts{a: all(2)}) {
		t.Fatalf("resubscribe: %+v %v", r, assigned(r))
	}
	b := e.topics.add("missing", 1)
	e.clock.Advance(topicRefresh)
	r = e.on(e.m, hbReq("g", "m1", 2, "a", "missing"))
	if r.MemberEpoch != 3 || !assigned(r).equal(parts{a: all(2), b: all(1)}) {
		t.Fatalf("topic created: %+v %v", r, assigned(r))
	}
}

func TestDescribe(t *testing.T) {
	e := newEnv(t)
	a := e.topics.add("a", 2)
	e.join("m1", "a")
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.GroupIDs = []string{"g", "nope", ""}
	resp := e.m.Describe(context.Background(), e.client(), req)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.GroupState != "Stable" || g.GroupEpoch != 1 || g.AssignmentEpoch != 1 || g.Assignor != "simple" || len(g.Members) != 1 {
		t.Fatalf("describe: %+v", g)
	}
	mb := g.Members[0]
	if mb.MemberID != "m1" || mb.MemberEpoch != 1 || mb.ClientID != "client" || mb.ClientHost != "/127.0.0.1" || !slices.Equal(mb.SubscribedTopicNames, []string{"a"}) ||
		len(mb.Assignment.TopicPartitions) != 1 || mb.Assignment.TopicPartitions[0].TopicID != a || mb.Assignment.TopicPartitions[0].Topic != "a" {
		t.Fatalf("member: %+v", mb)
	}
	if nf := resp.Groups[1]; nf.ErrorCode != kerr.GroupIDNotFound.Code || *nf.ErrorMessage != "Group nope not found." || nf.GroupState != "Dead" {
		t.Fatalf("not found: %+v", nf)
	}
	if resp.Groups[2].ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("empty id: %+v", resp.Groups[2])
	}
}

func TestOtherGroupTypeRefused(t *testing.T) {
	e := newEnv(t)
	e.topics.add("a", 1)
	e.m = New(Config{Clock: e.clock, Log: e.m.log, Others: func(_ context.Context, _ string, _ KV, id string) (bool, int16) { return id == "classic", 0 }})
	r := e.on(e.m, hbReq("classic", "m", 0, "a"))
	if r.ErrorCode != kerr.GroupIDNotFound.Code || *r.ErrorMessage != "Group classic is not a share group." {
		t.Fatalf("heartbeat: %+v", r)
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{"classic"}
	d := e.m.Describe(context.Background(), e.client(), req).Groups[0]
	if d.ErrorCode != kerr.GroupIDNotFound.Code || *d.ErrorMessage != "Group classic is not a share group." {
		t.Fatalf("describe: %+v", d)
	}
}

func TestListHoldsDelete(t *testing.T) {
	e := newEnv(t)
	e.topics.add("a", 1)
	ctx := context.Background()
	e.join("m1", "a")
	e.group = "h"
	e.join("x", "a")
	e.on(e.m, hbReq("h", "x", -1))
	got, code := e.m.List(ctx, "", e.kv, nil, nil)
	if code != 0 || len(got) != 2 || got[0].Group != "g" || got[0].GroupState != "Stable" || got[0].GroupType != "share" || got[0].ProtocolType != "share" || got[1].GroupState != "Empty" {
		t.Fatalf("list: %+v", got)
	}
	if got, _ := e.m.List(ctx, "", e.kv, []string{"empty"}, []string{"SHARE"}); len(got) != 1 || got[0].Group != "h" {
		t.Fatalf("filtered: %+v", got)
	}
	if got, _ := e.m.List(ctx, "", e.kv, nil, []string{"classic"}); len(got) != 0 {
		t.Fatalf("type filter: %+v", got)
	}
	if held, members, _ := e.m.Holds(ctx, "", e.kv, "g"); !held || !members {
		t.Fatal("Holds g")
	}
	if held, _, _ := e.m.Holds(ctx, "", e.kv, "other"); held {
		t.Fatal("Holds other")
	}
	if _, code := e.m.DeleteEmpty(ctx, "", e.kv, "g"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete non-empty: %d", code)
	}
	// An empty group goes with its share-partition rows.
	h := sharepartition.NewHandle(sharepartition.Key{Group: "h", Topic: "a", Partition: 0}, sharepartition.DefaultConfig(), func(context.Context) (int64, error) { return 0, nil })
	if err := h.Update(ctx, e.kv, func(*sharepartition.Partition) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if len(e.kv.Keys(queen.ShareStatePrefix("h"))) == 0 {
		t.Fatal("no share-partition row to delete")
	}
	if ok, code := e.m.DeleteEmpty(ctx, "", e.kv, "h"); !ok || code != 0 {
		t.Fatalf("delete empty: %v %d", ok, code)
	}
	if k := e.kv.Keys(queen.ShareStatePrefix("h")); len(k) != 0 {
		t.Fatalf("share-partition rows left: %v", k)
	}
	if k := e.kv.Keys(queen.ShareGroupPrefix("h")); len(k) != 0 {
		t.Fatalf("group rows left: %v", k)
	}
	if ok, _, _ := e.m.State(ctx, e.kv, "h"); ok {
		t.Fatal("deleted group still exists")
	}
}

func TestMemberOnAnyNode(t *testing.T) {
	e := newEnv(t)
	e.topics.add("a", 1)
	other := e.manager(nil, false, 2) // another node: reads the rows
	ctx := context.Background()
	if c := other.Member(ctx, e.kv, "g", "m1"); c != kerr.GroupIDNotFound.Code {
		t.Fatalf("no group: %d", c)
	}
	e.join("m1", "a")
	if c := other.Member(ctx, e.kv, "g", "m1"); c != 0 {
		t.Fatalf("member: %d", c)
	}
	if c := other.Member(ctx, e.kv, "g", "m2"); c != kerr.UnknownMemberID.Code {
		t.Fatalf("non-member: %d", c)
	}
	if c := other.Member(ctx, e.kv, "", "m1"); c != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group: %d", c)
	}
	e.on(e.m, hbReq("g", "m1", -1))
	// The other node's cached positive answer lasts memberCacheTTL at most.
	e.clock.Advance(memberCacheTTL)
	if c := other.Member(ctx, e.kv, "g", "m1"); c != kerr.UnknownMemberID.Code {
		t.Fatalf("after leave: %d", c)
	}
	if c := e.m.Member(ctx, e.kv, "g", "m1"); c != kerr.UnknownMemberID.Code {
		t.Fatalf("owner after leave: %d", c)
	}
	e.kv.Fail(errors.New("down"))
	if c := other.Member(ctx, e.kv, "g", "m1"); c == 0 {
		t.Fatal("a store failure answered member")
	}
}

func TestSubscribed(t *testing.T) {
	e := newEnv(t)
	e.topics.add("a", 1)
	e.join("m1", "b", "a")
	e.join("m2", "c")
	got, err := e.m.Subscribed(context.Background(), e.kv, "g")
	if err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("%v %v", got, err)
	}
}

// TestTakeover: a new owner continues the group from its rows (epochs,
// members, assignments), the old owner answers NOT_COORDINATOR, and a
// write by an old owner that missed the move fails its compare-and-set.
func TestTakeover(t *testing.T) {
	e := newEnv(t)
	a := e.topics.add("a", 2)
	o1, o2 := testsupport.NewOwners(1, 1), testsupport.NewOwners(2, 1)
	n1, n2 := e.manager(o1, true, 1), e.manager(o2, true, 2)
	e.on(n1, hbReq("g", "m1", 0, "a"))
	e.on(n1, hbReq("g", "m2", 0, "a"))
	if r := e.on(n2, hbReq("g", "m1", 1)); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("non-owner: %+v", r)
	}
	// Node 2 takes the group over while node 1 has not seen the move yet.
	o2.Set(2)
	r := e.on(n2, hbReq("g", "m1", 1))
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || r.Assignment != nil {
		t.Fatalf("new owner: %+v %v", r, assigned(r))
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{"g"}
	d := n2.Describe(context.Background(), e.client(), req).Groups[0]
	if d.GroupEpoch != 2 || len(d.Members) != 2 || d.Members[0].Assignment.TopicPartitions[0].TopicID != a {
		t.Fatalf("described by the new owner: %+v", d)
	}
	if r := e.on(n2, hbReq("g", "m2", 2)); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("m2 on new owner: %+v", r)
	}
	// The old owner, which kept the group in memory (it never saw the
	// move), loses its next write's compare-and-set.
	if r := e.on(n1, hbReq("g", "m3", 0, "a")); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("stale owner write: %+v", r)
	}
	o1.Set(2)
	if r := e.on(n1, hbReq("g", "m1", 2)); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("old owner: %+v", r)
	}
	if r := e.on(n2, hbReq("g", "m1", 2)); r.ErrorCode != 0 || r.MemberEpoch != 2 {
		t.Fatalf("new owner unaffected: %+v", r)
	}
	if _, _, ok := e.kv.Row(queen.FenceKey("g")); !ok {
		t.Fatal("no fence row")
	}
}
