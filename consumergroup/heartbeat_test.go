package consumergroup

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestJoinAssignsEveryPartitionAtEpochOne(t *testing.T) {
	e := newEnv(t)
	tid := e.topics.add("orders", 6)
	r := e.ok(e.join("m1", "orders"))
	if r.MemberEpoch != 1 || r.MemberID == nil || *r.MemberID != "m1" || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join answer: epoch %d member %v interval %d", r.MemberEpoch, r.MemberID, r.HeartbeatIntervalMillis)
	}
	if got := assigned(r); !got.equal(allOf(tid, 6)) {
		t.Fatalf("assignment %v", got)
	}
	if ge, ae := e.epochs(); ge != 1 || ae != 1 {
		t.Fatalf("group epoch %d, assignment epoch %d", ge, ae)
	}
	// A partial heartbeat with nothing new carries no assignment.
	r = e.ok(e.hb("m1", 1, nil))
	if r.Assignment != nil || r.MemberEpoch != 1 {
		t.Fatalf("steady heartbeat: %+v", r)
	}
}

// TestRevocationBeforeReassignment: a second member gets nothing until
// the first reports its partitions gone; the first keeps its epoch while it
// revokes.
func TestRevocationBeforeReassignment(t *testing.T) {
	e := newEnv(t)
	tid := e.topics.add("orders", 6)
	e.ok(e.join("m1", "orders"))
	r2 := e.ok(e.join("m2", "orders"))
	if r2.MemberEpoch != 2 || len(assigned(r2)) != 0 {
		t.Fatalf("m2 joined: epoch %d assigned %v, want epoch 2 and nothing (all owned by m1)", r2.MemberEpoch, assigned(r2))
	}
	if st := e.g().state(); st != StateReconciling {
		t.Fatalf("state %s", st)
	}
	r1 := e.ok(e.hb("m1", 1, nil))
	keep := assigned(r1)
	if r1.MemberEpoch != 1 || len(keep[tid]) != 3 {
		t.Fatalf("m1 asked to revoke: epoch %d assigned %v", r1.MemberEpoch, keep)
	}
	// m1 still reports owning everything: no progress, m2 still waits.
	r1 = e.ok(e.hb("m1", 1, allOf(tid, 6)))
	if r1.MemberEpoch != 1 {
		t.Fatalf("m1 moved on before revoking: %d", r1.MemberEpoch)
	}
	if r2 = e.ok(e.hb("m2", 2, parts{})); len(assigned(r2)[tid]) != 0 {
		t.Fatalf("m2 was given %v while m1 still owns them", assigned(r2))
	}
	// m1 revokes: it moves to epoch 2, and m2 then gets the rest.
	r1 = e.ok(e.hb("m1", 1, keep))
	if r1.MemberEpoch != 2 {
		t.Fatalf("m1 after revoking: epoch %d", r1.MemberEpoch)
	}
	r2 = e.ok(e.hb("m2", 2, parts{}))
	got := assigned(r2)
	if len(got[tid]) != 3 {
		t.Fatalf("m2 after m1 revoked: %v", got)
	}
	for _, p := range got[tid] {
		if keep.has(tid, p) {
			t.Fatalf("partition %d given to both", p)
		}
	}
	e.ok(e.hb("m2", 2, got))
	if st := e.g().state(); st != StateStable {
		t.Fatalf("state %s, want Stable", st)
	}
}

func TestLeaveRebalancesAndFreesPartitions(t *testing.T) {
	e := newEnv(t)
	tid := e.topics.add("orders", 4)
	e.twoSettled("orders")
	r := e.ok(e.send(e.m, hbReq(e.group, "m2", leaveEpoch, nil)))
	if r.MemberEpoch != -1 {
		t.Fatalf("leave answered epoch %d", r.MemberEpoch)
	}
	r1 := e.ok(e.hb("m1", 2, nil))
	if r1.MemberEpoch != 3 || !assigned(r1).equal(allOf(tid, 4)) {
		t.Fatalf("after m2 left: epoch %d %v", r1.MemberEpoch, assigned(r1))
	}
	e.refused(e.hb("m2", 2, nil), kerr.UnknownMemberID.Code, "Member m2 is not a member of group g.")
}

func TestRefusalsAnswerKafkasCodesAndMessages(t *testing.T) {
	e := newEnv(t)
	e.topics.add("orders", 2)
	e.ok(e.join("m1", "orders"))
	e.refused(e.hb("m1", 5, nil), kerr.FencedMemberEpoch.Code, "The consumer group member has a greater member epoch (5) than the one known by the group coordinator (1). The member must abandon all its partitions and rejoin.")
	e.refused(e.hb("nobody", 1, nil), kerr.UnknownMemberID.Code, "Member nobody is not a member of group g.")
	e.group = "other"
	e.refused(e.hb("m1", 1, nil), kerr.GroupIDNotFound.Code, "Consumer group other not found.")
	e.group = "g"

	req := hbReq(e.group, "", 0, parts{})
	e.refused(e.send(e.m, req), kerr.InvalidRequest.Code, "MemberId can't be empty.")
	req = hbReq(e.group, "m9", 0, parts{})
	e.refused(e.send(e.m, req), kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request.")
	req.RebalanceTimeoutMillis = 1000
	e.refused(e.send(e.m, req), kerr.InvalidRequest.Code, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
	req.SubscribedTopicNames = []string{"orders"}
	bad := "nope"
	req.ServerAssignor = &bad
	e.refused(e.send(e.m, req), kerr.UnsupportedAssignor.Code, "ServerAssignor nope is not supported. Supported assignors: uniform, range.")
	req.ServerAssignor = nil
	re := "orders("
	req.SubscribedTopicRegex = &re
	r := e.send(e.m, req)
	if r.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("bad regex: %d", r.ErrorCode)
	}
	req = hbReq(e.group, "m1", -3, nil)
	e.refused(e.send(e.m, req), kerr.InvalidRequest.Code, "MemberEpoch is invalid.")
	req = hbReq(e.group, "m1", staticLeaveEpoch, nil)
	e.refused(e.send(e.m, req), kerr.InvalidRequest.Code, "InstanceId can't be null.")
}

func TestGroupMaxSize(t *testing.T) {
	e := newEnv(t)
	e.m.cfg.MaxGroupSize = 1
	e.topics.add("orders", 2)
	e.ok(e.join("m1", "orders"))
	e.refused(e.join("m2", "orders"), kerr.GroupMaxSizeReached.Code, "The consumer group has reached its maximum capacity of 1 members.")
	e.ok(e.join("m1", "orders")) // a member already in is not refused
}

func TestV0MemberIDIsGeneratedByTheServer(t *testing.T) {
	e := newEnv(t)
	e.topics.add("orders", 2)
	req := hbReq(e.group, "", 0, parts{})
	req.Version = 0
	req.RebalanceTimeoutMillis = 1000
	req.SubscribedTopicNames = []string{"orders"}
	r := e.ok(e.send(e.m, req))
	if r.MemberID == nil || len(*r.MemberID) != 22 {
		t.Fatalf("member id %v", r.MemberID)
	}
}

func TestSessionExpiryRemovesTheMember(t *testing.T) {
	e := newEnv(t)
	tid := e.topics.add("orders", 4)
	e.ok(e.join("m1", "orders"))
	e.ok(e.join("m2", "orders"))
	for i := 0; i < 10; i++ { // m1 keeps heartbeating, m2 goes silent
		e.advance(5 * time.Second)
		r := e.ok(e.hb("m1", e.g().members["m1"].epoch, nil))
		e.ok(e.hb("m1", r.MemberEpoch, assigned(r)))
	}
	if _, ok := e.g().members["m2"]; ok {
		t.Fatal("m2 outlived its session")
	}
	r := e.ok(e.hb("m1", e.g().members["m1"].epoch, nil))
	if !assigned(r).equal(allOf(tid, 4)) && !e.g().members["m1"].assigned.equal(allOf(tid, 4)) {
		t.Fatalf("m1 after m2 expired: %v", e.g().members["m1"].assigned)
	}
}

func TestRebalanceTimeoutFencesAMemberThatDoesNotRevoke(t *testing.T) {
	e := newEnv(t)
	e.topics.add("orders", 4)
	req := hbReq(e.group, "m1", 0, parts{})
	req.RebalanceTimeoutMillis = 3000
	req.SubscribedTopicNames = []string{"orders"}
	e.ok(e.send(e.m, req))
	e.ok(e.join("m2", "orders"))
	e.ok(e.hb("m1", 1, nil)) // asked to revoke; never does
	e.advance(2 * time.Second)
	if _, ok := e.g().members["m1"]; !ok {
		t.Fatal("m1 fenced before its rebalance timeout")
	}
	e.advance(1500 * time.Millisecond)
	if _, ok := e.g().members["m1"]; ok {
		t.Fatal("m1 not fenced after its rebalance timeout")
	}
	e.refused(e.hb("m1", 1, nil), kerr.UnknownMemberID.Code, "")
}

func TestStaticMemberRejoinKeepsAssignmentWithoutNewEpoch(t *testing.T) {
	e := newEnv(t)
	tid := e.topics.add("orders", 4)
	inst := "i1"
	join := func(id string) *kmsg.ConsumerGroupHeartbeatRequest {
		req := hbReq(e.group, id, 0, parts{})
		req.RebalanceTimeoutMillis = 1000
		req.SubscribedTopicNames = []string{"orders"}
		req.InstanceID = &inst
		return req
	}
	r := e.ok(e.send(e.m, join("a")))
	e.ok(e.join("m2", "orders"))
	r = e.ok(e.hb2(e.m, "a", &inst, r.MemberEpoch, nil))
	e.ok(e.hb2(e.m, "a", &inst, r.MemberEpoch, assigned(r)))
	mine := e.g().members["a"].assigned
	ge, _ := e.epochs()
	e.refused(e.send(e.m, join("b")), kerr.UnreleasedInstanceID.Code, "Static member b with instance id i1 cannot join the group because the instance id is owned by a member.")
	// Temporary leave, then a restart with a new member id.
	lv := hbReq(e.group, "a", staticLeaveEpoch, nil)
	lv.InstanceID = &inst
	if r := e.ok(e.send(e.m, lv)); r.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave answered %d", r.MemberEpoch)
	}
	r = e.ok(e.send(e.m, join("b")))
	if !assigned(r).equal(mine) {
		t.Fatalf("rejoined static member got %v, had %v", assigned(r), mine)
	}
	if ge2, _ := e.epochs(); ge2 != ge {
		t.Fatalf("group epoch moved %d -> %d on a static rejoin", ge, ge2)
	}
	e.refused(e.hb2(e.m, "a", &inst, 2, nil), kerr.FencedInstanceID.Code, "Static member a with instance id i1 was fenced by member b.")
	_ = tid
}

func (e *env) hb2(m *Manager, id string, inst *string, epoch int32, owned parts) *kmsg.ConsumerGroupHeartbeatResponse {
	req := hbReq(e.group, id, epoch, owned)
	req.InstanceID = inst
	return e.send(m, req)
}

func TestRegexSubscriptionFollowsNewTopics(t *testing.T) {
	e := newEnv(t)
	t1 := e.topics.add("events-a", 2)
	req := hbReq(e.group, "m1", 0, parts{})
	req.RebalanceTimeoutMillis = 1000
	re := "events-.*"
	req.SubscribedTopicRegex = &re
	r := e.ok(e.send(e.m, req))
	if !assigned(r).equal(allOf(t1, 2)) {
		t.Fatalf("regex join: %v", assigned(r))
	}
	t2 := e.topics.add("events-b", 3)
	e.topics.add("other", 3)
	e.topics.add("old-events-c", 3) // the whole name must match, as in Kafka
	e.advance(2 * time.Second)
	r = e.ok(e.hb("m1", 1, assigned(r)))
	want := allOf(t1, 2)
	for p := int32(0); p < 3; p++ {
		want.add(t2, p)
	}
	if r.MemberEpoch != 2 || !assigned(r).equal(want) {
		t.Fatalf("after a matching topic appeared: epoch %d %v", r.MemberEpoch, assigned(r))
	}
}

func TestStatsCountGroupsEpochsAndAssignments(t *testing.T) {
	e := newEnv(t)
	e.topics.add("orders", 2)
	e.ok(e.join("m1", "orders"))
	e.ok(e.join("m2", "orders"))
	st := e.m.Stats()
	if st.Rebalances != 2 || st.Assignments != 2 || st.MaxEpoch != 2 {
		t.Fatalf("stats %+v", st)
	}
	for _, s := range st.States {
		if s.State == StateReconciling && (s.Groups != 1 || s.Members != 2) {
			t.Fatalf("states %+v", st.States)
		}
	}
}

// TestSlowCatalogueDoesNotHoldTheGroup: a heartbeat listing the catalogue
// (which may wait on Queen) does not hold the group, so a commit's member
// check meanwhile is answered at once.
func TestSlowCatalogueDoesNotHoldTheGroup(t *testing.T) {
	e := newEnv(t)
	e.topics.add("orders", 2)
	e.ok(e.join("m1", "orders"))
	e.advance(2 * time.Second) // the next heartbeat lists again
	gate, inAll := make(chan struct{}), make(chan struct{}, 1)
	e.topics.mu.Lock()
	e.topics.gate, e.topics.inAll = gate, inAll
	e.topics.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.hb("m1", 1, nil)
	}()
	<-inAll // the heartbeat is listing now
	e.commitCheckAnswers("a heartbeat's catalogue listing")
	close(gate)
	<-done
}

// TestGroupAssignorIsTheOneMostMembersName: Kafka's
// preferredServerAssignor, described by ConsumerGroupDescribe.
func TestGroupAssignorIsTheOneMostMembersName(t *testing.T) {
	e := newEnv(t)
	e.topics.add("orders", 2)
	join := func(id, assignor string) {
		req := hbReq(e.group, id, 0, parts{})
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 1000, []string{"orders"}
		req.ServerAssignor = &assignor
		e.ok(e.send(e.m, req))
	}
	join("m1", "range")
	join("m2", "uniform")
	join("m3", "range")
	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"g"}
	g := e.m.Describe(context.Background(), e.client(), d).Groups[0]
	if g.ErrorCode != 0 || g.AssignorName != "range" || len(g.Members) != 3 || g.Epoch != 3 {
		t.Fatalf("described %+v", g)
	}
}

// TestGroupCeiling: past the ceiling of groups held (or one identity's
// share) a new group is COORDINATOR_NOT_AVAILABLE; an existing one still
// serves its members.
func TestGroupCeiling(t *testing.T) {
	e := newEnv(t)
	e.m.cfg.MaxGroups, e.m.cfg.MaxGroupsPerIdentity = 10, 1
	e.topics.add("orders", 2)
	e.ok(e.join("m1", "orders"))
	e.group = "g2"
	e.refused(e.join("m1", "orders"), kerr.CoordinatorNotAvailable.Code, "")
	e.group = "g"
	e.ok(e.join("m2", "orders"))
}
