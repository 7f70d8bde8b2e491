package coordinator

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func staticJoin(version int16, group, member, instance string, protos ...string) *kmsg.JoinGroupRequest {
	r := joinReq(version, group, member, protos...)
	r.InstanceID = kmsg.StringPtr(instance)
	return r
}

func (h *harness) staticHeartbeat(group, member, instance string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation, r.InstanceID = group, member, gen, kmsg.StringPtr(instance)
	return h.c.Heartbeat(context.Background(), h.cl, r).ErrorCode
}

func staticSync(group, member, instance string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := syncReq(group, member, gen, assign)
	r.Version = 5
	r.InstanceID = kmsg.StringPtr(instance)
	r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	return r
}

// staticGroup is a Stable group of static members with instance ids
// instances, formed in one generation (join delay 3 s); the first is the
// leader. It returns member id by instance id, and the generation.
func staticGroup(t *testing.T, h *harness, group string, instances ...string) (map[string]string, int32) {
	t.Helper()
	return staticGroupSession(t, h, group, 0, instances...)
}

// staticGroupSession is staticGroup with a session timeout of sessionMs
// (0: the harness's).
func staticGroupSession(t *testing.T, h *harness, group string, sessionMs int32, instances ...string) (map[string]string, int32) {
	t.Helper()
	var joins []<-chan *kmsg.JoinGroupResponse
	for _, in := range instances {
		req := staticJoin(5, group, "", in)
		if sessionMs > 0 {
			req.SessionTimeoutMillis = sessionMs
		}
		joins = append(joins, h.joinAsync(req))
	}
	h.clock.Advance(3 * time.Second) // the initial delay, extended once by the later joiners
	h.clock.Advance(3 * time.Second)
	ids := map[string]string{}
	var gen int32
	var leader string
	for i, ch := range joins {
		j := recv(t, ch)
		require.Zero(t, j.ErrorCode, "static join of %s", instances[i])
		require.True(t, strings.HasPrefix(j.MemberID, instances[i]+"-"), "a static member id is its instance id + uuid: %q", j.MemberID)
		ids[instances[i]], gen, leader = j.MemberID, j.Generation, j.LeaderID
	}
	require.Equal(t, ids[instances[0]], leader)
	assign := map[string]string{}
	for _, in := range instances {
		assign[ids[in]] = "parts-of-" + in
	}
	var syncs []<-chan *kmsg.SyncGroupResponse
	for _, in := range instances[1:] {
		syncs = append(syncs, h.syncAsync(staticSync(group, ids[in], in, gen, nil)))
	}
	s := h.c.SyncGroup(context.Background(), h.cl, staticSync(group, leader, instances[0], gen, assign))
	require.Zero(t, s.ErrorCode)
	require.Equal(t, "parts-of-"+instances[0], string(s.MemberAssignment))
	for i, ch := range syncs {
		r := recv(t, ch)
		require.Zero(t, r.ErrorCode)
		require.Equal(t, "parts-of-"+instances[i+1], string(r.MemberAssignment))
	}
	require.Equal(t, "Stable", h.state(group))
	return ids, gen
}

// staticTrio is group "g" of static members a (leading), b and c, and the
// rebalances counted once it is Stable.
func staticTrio(t *testing.T) (*harness, map[string]string, int32, uint64) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	ids, gen := staticGroup(t, h, "g", "a", "b", "c")
	return h, ids, gen, h.c.Stats().Rebalances
}

// restartStatic is instance's consumer restarted: a JoinGroup of version
// with no member id, which must succeed.
func (h *harness) restartStatic(t *testing.T, version int16, instance string) *kmsg.JoinGroupResponse {
	t.Helper()
	j := recv(t, h.joinAsync(staticJoin(version, "g", "", instance)))
	require.Zero(t, j.ErrorCode)
	return j
}

// A static member restarted inside its session timeout (new member id,
// same instance id) gets its assignment back with no rebalance; the old id
// is fenced everywhere a member is checked.
func TestStaticRestartKeepsAssignmentWithoutRebalance(t *testing.T) {
	h, ids, gen, before := staticTrio(t)
	j := h.restartStatic(t, 8, "b")
	require.Equal(t, gen, j.Generation, "the rejoiner is answered the current generation")
	require.NotEqual(t, ids["b"], j.MemberID)
	require.True(t, strings.HasPrefix(j.MemberID, "b-"))
	require.Equal(t, ids["a"], j.LeaderID)
	require.Empty(t, j.Members)
	require.False(t, j.SkipAssignment)
	require.Equal(t, "Stable", h.state("g"))
	require.Equal(t, before, h.c.Stats().Rebalances, "no rebalance")

	s := h.c.SyncGroup(context.Background(), h.cl, staticSync("g", j.MemberID, "b", gen, nil))
	require.Zero(t, s.ErrorCode)
	require.Equal(t, "parts-of-b", string(s.MemberAssignment), "same assignment")
	require.Equal(t, "consumer", *s.ProtocolType)
	require.Equal(t, "range", *s.Protocol)

	// The old id: FENCED_INSTANCE_ID with its instance id, unknown without.
	require.Equal(t, kerr.FencedInstanceID.Code, h.staticHeartbeat("g", ids["b"], "b", gen))
	require.Equal(t, kerr.UnknownMemberID.Code, h.heartbeat("g", ids["b"], gen))
	require.Equal(t, kerr.FencedInstanceID.Code, h.c.SyncGroup(context.Background(), h.cl, staticSync("g", ids["b"], "b", gen, nil)).ErrorCode)
	old := commitReq("g", ids["b"], gen, "orders", map[int32]int64{0: 5})
	old.Version, old.InstanceID = 7, kmsg.StringPtr("b")
	require.Equal(t, []int16{kerr.FencedInstanceID.Code}, h.commit(old))
	jo := recv(t, h.joinAsync(staticJoin(5, "g", ids["b"], "b")))
	require.Equal(t, kerr.FencedInstanceID.Code, jo.ErrorCode)
	code, _ := h.c.TxnCommitCheck(h.cl, "g", ids["b"], kmsg.StringPtr("b"), gen, 5)
	require.Equal(t, kerr.FencedInstanceID.Code, code)

	// The new id and the others carry on in the same generation.
	require.Zero(t, h.staticHeartbeat("g", j.MemberID, "b", gen))
	require.Zero(t, h.staticHeartbeat("g", ids["a"], "a", gen))
	nw := commitReq("g", j.MemberID, gen, "orders", map[int32]int64{0: 5})
	nw.Version, nw.InstanceID = 9, kmsg.StringPtr("b")
	require.Equal(t, []int16{0}, h.commit(nw))
	code, _ = h.c.TxnCommitCheck(h.cl, "g", j.MemberID, kmsg.StringPtr("b"), gen, 5)
	require.Zero(t, code)
	code, _ = h.c.TxnCommitCheck(h.cl, "g", j.MemberID, kmsg.StringPtr("nobody"), gen, 5)
	require.Equal(t, kerr.UnknownMemberID.Code, code)
	require.Equal(t, before, h.c.Stats().Rebalances)

	d := h.c.DescribeGroups(context.Background(), h.cl, &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g"}}).Groups[0]
	got := map[string]string{}
	for _, m := range d.Members {
		require.NotNil(t, m.InstanceID)
		got[*m.InstanceID] = m.MemberID
	}
	require.Equal(t, map[string]string{"a": ids["a"], "b": j.MemberID, "c": ids["c"]}, got)
}

// A restarted static leader: v9 tells it it leads, with every member, and
// to skip the assignment (KIP-814); v8 names the leader as it was, so it
// does not think it leads. Either way the group keeps its assignment.
func TestStaticLeaderRestartSkipAssignment(t *testing.T) {
	h, ids, gen, before := staticTrio(t)
	j8 := h.restartStatic(t, 8, "a")
	require.Equal(t, ids["a"], j8.LeaderID, "v8: the leader as it was before the replacement")
	require.Empty(t, j8.Members)
	require.False(t, j8.SkipAssignment)

	j9 := h.restartStatic(t, 9, "a")
	require.Equal(t, gen, j9.Generation)
	require.Equal(t, j9.MemberID, j9.LeaderID, "v9: the rejoiner is told it leads")
	require.True(t, j9.SkipAssignment)
	require.Len(t, j9.Members, 3)
	seen := map[string]string{}
	for _, m := range j9.Members {
		require.NotNil(t, m.InstanceID)
		seen[*m.InstanceID] = m.MemberID
	}
	require.Equal(t, map[string]string{"a": j9.MemberID, "b": ids["b"], "c": ids["c"]}, seen)
	require.Equal(t, "consumer", *j9.ProtocolType, "v7+ answers the protocol type")

	// Its SyncGroup in a Stable group returns what it had; a plan it sends
	// anyway is not applied.
	s := h.c.SyncGroup(context.Background(), h.cl, staticSync("g", j9.MemberID, "a", gen, map[string]string{j9.MemberID: "x", ids["b"]: "y"}))
	require.Zero(t, s.ErrorCode)
	require.Equal(t, "parts-of-a", string(s.MemberAssignment))
	sb := h.c.SyncGroup(context.Background(), h.cl, staticSync("g", ids["b"], "b", gen, nil))
	require.Equal(t, "parts-of-b", string(sb.MemberAssignment))
	require.Equal(t, before, h.c.Stats().Rebalances)
	require.Equal(t, kerr.FencedInstanceID.Code, h.staticHeartbeat("g", j8.MemberID, "a", gen), "the v8 rejoiner was replaced in turn")
}

// A static rejoin that changes the protocol the group would select
// rebalances; one no other member supports is refused, as Kafka refuses it.
func TestStaticRestartWithNewProtocolRebalances(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	ids, gen := staticGroup(t, h, "g", "a")
	// Listing roundrobin first, it is the only member's first choice.
	j := h.joinAsync(staticJoin(5, "g", "", "a", "roundrobin", "range"))
	r := recv(t, j)
	require.Zero(t, r.ErrorCode)
	require.Equal(t, gen+1, r.Generation)
	require.Equal(t, "roundrobin", *r.Protocol)
	require.Equal(t, r.MemberID, r.LeaderID)
	require.NotEqual(t, ids["a"], r.MemberID)
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, recv(t, h.joinAsync(staticJoin(5, "g", "", "b", "sticky"))).ErrorCode)
}

// A duplicate instance id while the first is parked: the parked request
// is answered FENCED_INSTANCE_ID at once, and a group in its sync phase
// rebalances (the leader may be assigning to the old id).
func TestStaticDuplicateFencesParkedRequest(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	ids, gen := staticGroup(t, h, "g", "a", "b")
	// The leader rejoins: a rebalance; a completes the join with b.
	aj := h.joinAsync(staticJoin(5, "g", ids["a"], "a"))
	bj := recv(t, h.joinAsync(staticJoin(5, "g", ids["b"], "b")))
	ar := recv(t, aj)
	require.Zero(t, ar.ErrorCode)
	require.Equal(t, gen+1, bj.Generation)
	// b parks in SyncGroup; a duplicate b arrives.
	bs := h.syncAsync(staticSync("g", ids["b"], "b", gen+1, nil))
	pending(t, bs)
	// (Not joinAsync: the parked count does not move, one parks as one
	// is answered.)
	dup := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { dup <- h.c.JoinGroup(context.Background(), h.cl, staticJoin(5, "g", "", "b")) }()
	require.Equal(t, kerr.FencedInstanceID.Code, recv(t, bs).ErrorCode)
	require.Equal(t, "PreparingRebalance", h.state("g"))
	pending(t, dup)
	a2 := recv(t, h.joinAsync(staticJoin(5, "g", ids["a"], "a")))
	d := recv(t, dup)
	require.Zero(t, a2.ErrorCode)
	require.Zero(t, d.ErrorCode)
	require.Equal(t, gen+2, d.Generation)
	require.Len(t, a2.Members, 2)
}

// A static member that misses a rebalance is not dropped from it (only
// its session timeout removes it, and that rebalances).
func TestStaticMemberOutlivesMissedRebalanceUntilSessionEnds(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	ids, gen := staticGroup(t, h, "g", "a", "b")
	aj := h.joinAsync(staticJoin(5, "g", ids["a"], "a"))
	// b is silent: the join phase waits the rebalance timeout (20 s), but
	// b's session (10 s) ends first and removes it.
	h.clock.Advance(9 * time.Second)
	pending(t, aj)
	h.clock.Advance(2 * time.Second)
	r := recv(t, aj)
	require.Zero(t, r.ErrorCode)
	require.Len(t, r.Members, 1, "b's session ended")
	require.Equal(t, kerr.UnknownMemberID.Code, h.staticHeartbeat("g", ids["b"], "b", gen))

	// With a session longer than the rebalance timeout, the phase ends at
	// the rebalance timeout and b stays a member of the new generation.
	h2 := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	ids, gen = staticGroupSession(t, h2, "g", 60_000, "a", "b")
	req := staticJoin(5, "g", ids["a"], "a")
	req.SessionTimeoutMillis = 60_000
	aj = h2.joinAsync(req)
	h2.clock.Advance(20 * time.Second)
	r = recv(t, aj)
	require.Zero(t, r.ErrorCode)
	require.Equal(t, gen+1, r.Generation)
	require.Len(t, r.Members, 2, "the static member that did not rejoin is listed for the leader")
	require.Equal(t, kerr.IllegalGeneration.Code, h2.staticHeartbeat("g", ids["b"], "b", gen), "still a member, of an older generation")
	// Its session ends 60 s after its last sign of life (the join's end).
	h2.c.SyncGroup(context.Background(), h2.cl, staticSync("g", r.MemberID, "a", r.Generation, nil))
	for range 11 {
		h2.clock.Advance(5 * time.Second)
		require.Zero(t, h2.staticHeartbeat("g", r.MemberID, "a", r.Generation))
	}
	h2.clock.Advance(5 * time.Second)
	require.Equal(t, kerr.RebalanceInProgress.Code, h2.staticHeartbeat("g", r.MemberID, "a", r.Generation), "b's session ended: a rebalance")
	require.Equal(t, kerr.UnknownMemberID.Code, h2.staticHeartbeat("g", ids["b"], "b", r.Generation))
}

// When no member rejoins, the phase is held, not completed without them:
// static members are not dropped for missing it (Kafka's
// maybeElectNewJoinedLeader).
func TestStaticJoinPhaseWaitsWhenNoMemberRejoined(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	ids, gen := staticGroupSession(t, h, "g", 100_000, "a", "b")
	// A dynamic member joins (a rebalance) and leaves before anyone rejoins.
	dj := h.joinAsync(joinReq(3, "g", ""))
	require.Equal(t, "PreparingRebalance", h.state("g"))
	g := h.c.lookup(h.cl, "g")
	g.mu.Lock()
	var dyn string
	for id, m := range g.members {
		if m.instanceID == nil {
			dyn = id
		}
	}
	g.mu.Unlock()
	require.Zero(t, h.leave("g", dyn))
	require.Equal(t, kerr.UnknownMemberID.Code, recv(t, dj).ErrorCode)
	h.clock.Advance(20 * time.Second) // the rebalance timeout: nobody rejoined
	require.Equal(t, "PreparingRebalance", h.state("g"))
	require.Equal(t, kerr.RebalanceInProgress.Code, h.staticHeartbeat("g", ids["b"], "b", gen))
	req := staticJoin(5, "g", ids["a"], "a")
	req.SessionTimeoutMillis = 100_000
	aj := h.joinAsync(req)
	h.clock.Advance(20 * time.Second)
	r := recv(t, aj)
	require.Zero(t, r.ErrorCode)
	require.Equal(t, gen+1, r.Generation)
	require.Equal(t, ids["a"], r.LeaderID)
	require.Len(t, r.Members, 2)
}

// LeaveGroup v3+: several members, each answered; by instance id alone
// (administrative removal), by both (must match), and a pending member;
// one rebalance for all of them. Below v3 the code folds.
func TestLeaveGroupSeveralMembers(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	ids, gen := staticGroup(t, h, "g", "a", "b", "c", "d")
	// d restarts, so its old id is fenced.
	dj := recv(t, h.joinAsync(staticJoin(5, "g", "", "d")))
	require.Zero(t, dj.ErrorCode)
	pend := recv(t, h.joinAsync(joinReq(4, "g", "")))
	require.Equal(t, kerr.MemberIDRequired.Code, pend.ErrorCode)
	before := h.c.Stats().Rebalances

	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 5, "g"
	add := func(member string, instance *string) {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID, m.InstanceID, m.Reason = member, instance, kmsg.StringPtr("test says so")
		req.Members = append(req.Members, m)
	}
	add(ids["a"], kmsg.StringPtr("a"))     // static, both named
	add("", kmsg.StringPtr("b"))           // by instance id alone
	add("ghost", nil)                      // unknown
	add(ids["d"], kmsg.StringPtr("d"))     // replaced: fenced
	add("", kmsg.StringPtr("nobody"))      // unknown instance
	add(pend.MemberID, nil)                // pending
	add(ids["c"], kmsg.StringPtr("not-c")) // instance unknown
	resp := h.c.LeaveGroup(context.Background(), h.cl, req)
	require.Zero(t, resp.ErrorCode)
	var codes []int16
	for i, m := range resp.Members {
		require.Equal(t, req.Members[i].MemberID, m.MemberID)
		require.Equal(t, req.Members[i].InstanceID, m.InstanceID)
		codes = append(codes, m.ErrorCode)
	}
	require.Equal(t, []int16{0, 0, kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code, kerr.UnknownMemberID.Code, 0, kerr.UnknownMemberID.Code}, codes)
	require.Equal(t, "PreparingRebalance", h.state("g"))
	require.Equal(t, kerr.UnknownMemberID.Code, h.staticHeartbeat("g", ids["a"], "a", gen))
	require.Equal(t, kerr.UnknownMemberID.Code, h.staticHeartbeat("g", ids["b"], "b", gen))
	require.Equal(t, kerr.RebalanceInProgress.Code, h.staticHeartbeat("g", ids["c"], "c", gen))
	cj := h.joinAsync(staticJoin(5, "g", ids["c"], "c"))
	dr := recv(t, h.joinAsync(staticJoin(5, "g", dj.MemberID, "d")))
	cr := recv(t, cj)
	require.Zero(t, cr.ErrorCode)
	require.Zero(t, dr.ErrorCode)
	require.Equal(t, gen+1, cr.Generation)
	require.Equal(t, before+1, h.c.Stats().Rebalances, "one rebalance for the whole request")

	// A group not held here: every member UNKNOWN_MEMBER_ID, no top code.
	req.Group = "elsewhere"
	resp = h.c.LeaveGroup(context.Background(), h.cl, req)
	require.Zero(t, resp.ErrorCode)
	require.Len(t, resp.Members, len(req.Members))
	for _, m := range resp.Members {
		require.Equal(t, kerr.UnknownMemberID.Code, m.ErrorCode)
	}
	// Below v3: one member, one code.
	require.Equal(t, kerr.UnknownMemberID.Code, h.leave("g", "ghost"))
	require.Zero(t, h.leave("g", cr.MemberID))
}

// A static member's first join needs no MEMBER_ID_REQUIRED round trip, and
// static members count against the group's size like any other; a restart
// takes no new seat.
func TestStaticMembersCountAgainstGroupSize(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second; c.MaxGroupSize = 2 })
	ids, _ := staticGroup(t, h, "g", "a", "b")
	require.Equal(t, kerr.GroupMaxSizeReached.Code, recv(t, h.joinAsync(staticJoin(9, "g", "", "c"))).ErrorCode)
	require.Equal(t, kerr.GroupMaxSizeReached.Code, recv(t, h.joinAsync(joinReq(4, "g", ""))).ErrorCode)
	r := recv(t, h.joinAsync(staticJoin(9, "g", "", "b")))
	require.Zero(t, r.ErrorCode, "a restart at the ceiling is admitted")
	require.NotEqual(t, ids["b"], r.MemberID)
}

// Known-member joins check the instance id as every other request does.
func TestStaticKnownMemberJoinValidation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.JoinDelay = 3 * time.Second })
	ids, gen := staticGroup(t, h, "g", "a", "b")
	require.Equal(t, kerr.UnknownMemberID.Code, recv(t, h.joinAsync(staticJoin(5, "g", ids["a"], "zzz"))).ErrorCode)
	require.Equal(t, kerr.FencedInstanceID.Code, recv(t, h.joinAsync(staticJoin(5, "g", ids["a"], "b"))).ErrorCode)
	// A follower rejoining unchanged gets the current generation back.
	r := recv(t, h.joinAsync(staticJoin(7, "g", ids["b"], "b")))
	require.Zero(t, r.ErrorCode)
	require.Equal(t, gen, r.Generation)
	require.Equal(t, "consumer", *r.ProtocolType)
	// SyncGroup v5: a protocol the group does not run is refused.
	s := staticSync("g", ids["b"], "b", gen, nil)
	s.Protocol = kmsg.StringPtr("roundrobin")
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, h.c.SyncGroup(context.Background(), h.cl, s).ErrorCode)
	s = staticSync("g", ids["b"], "b", gen, nil)
	s.ProtocolType = kmsg.StringPtr("connect")
	require.Equal(t, kerr.InconsistentGroupProtocol.Code, h.c.SyncGroup(context.Background(), h.cl, s).ErrorCode)
	s = staticSync("g", ids["b"], "b", gen, nil)
	s.ProtocolType, s.Protocol = nil, nil
	require.Zero(t, h.c.SyncGroup(context.Background(), h.cl, s).ErrorCode, "absent is no conflict")
}
