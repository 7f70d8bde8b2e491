package coordinator

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup answers a JoinGroup v0-4, blocking until the join phase it
// entered completes or ctx ends. A Kafka broker parks the request the same
// way and answers nothing else on that connection meanwhile.
func (c *Coordinator) JoinGroup(ctx context.Context, cl Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if code := c.claimFence(ctx, cl, req.Group, req.MemberID); code != 0 {
		resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, req.MemberID
		return resp
	}
	res := c.join(cl, req)
	if res.wait != nil {
		select {
		case r := <-res.wait:
			res.joinResult = r
		case <-ctx.Done():
			// The member keeps its place in the join phase; the answer it
			// misses is buffered and dropped.
			res.joinResult = joinResult{code: kerr.CoordinatorNotAvailable.Code, generation: -1, memberID: req.MemberID}
		}
	}
	r := res.joinResult
	resp.ErrorCode = r.code
	resp.Generation = r.generation
	resp.LeaderID = r.leader
	resp.MemberID = r.memberID
	resp.Members = r.members
	if r.code == 0 {
		p := r.protocol
		resp.Protocol = &p
	}
	return resp
}

type joinOutcome struct {
	joinResult
	wait chan joinResult
}

func joinErr(code int16, memberID string) joinOutcome {
	return joinOutcome{joinResult: joinResult{code: code, generation: -1, memberID: memberID}}
}

func (c *Coordinator) join(cl Client, req *kmsg.JoinGroupRequest) joinOutcome {
	if !validGroupID(req.Group, false) {
		return joinErr(kerr.InvalidGroupID.Code, req.MemberID)
	}
	if code := c.ownerCode(cl, req.Group); code != 0 {
		return joinErr(code, req.MemberID)
	}
	if c.closed.Load() {
		return joinErr(kerr.NotCoordinator.Code, req.MemberID)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return joinErr(kerr.InvalidSessionTimeout.Code, req.MemberID)
	}
	rebalance := session // v0 has no rebalance timeout; Kafka uses the session's
	if req.Version >= 1 && req.RebalanceTimeoutMillis > 0 {
		// Clamped to the longest session the coordinator admits: a join
		// phase held open for the 24 days an int32 allows would stall the
		// whole group behind one member that never rejoins.
		rebalance = min(time.Duration(req.RebalanceTimeoutMillis)*time.Millisecond, c.cfg.MaxSessionTimeout)
	}
	if req.ProtocolType == "" || len(req.Protocols) == 0 {
		return joinErr(kerr.InconsistentGroupProtocol.Code, req.MemberID)
	}
	protos := make([]protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		// Copied: the decoded request may alias the connection's buffer, and
		// OffsetDelete reads these bytes long after.
		protos[i] = protocol{name: p.Name, metadata: slices.Clone(p.Metadata)}
	}

	var g *group
	if req.MemberID == "" {
		var err error
		if g, err = c.getOrCreate(cl, req.Group); err != nil {
			c.log.Warn("consumer group refused: the coordinator holds its ceiling of groups, or this identity its share of it", "group", req.Group, "max_groups", c.cfg.MaxGroups, "max_groups_per_identity", c.cfg.MaxGroupsPerIdentity)
			return joinErr(kerr.CoordinatorNotAvailable.Code, "")
		}
	} else if g = c.lookup(cl, req.Group); g == nil {
		return joinErr(kerr.UnknownMemberID.Code, req.MemberID)
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead {
		return joinErr(kerr.CoordinatorNotAvailable.Code, req.MemberID)
	}
	newMember := func(id string) *member {
		return &member{id: id, clientID: cl.ID, clientHost: cl.Host, protocols: protos, session: session, rebalance: rebalance}
	}
	wait := func(m *member) joinOutcome {
		m.refuseJoin(kerr.RebalanceInProgress.Code) // a previous JoinGroup of this member is still parked
		ch := make(chan joinResult, 1)
		m.joinWait = ch
		return joinOutcome{wait: ch}
	}
	addAndRebalance := func(id string) joinOutcome {
		m := newMember(id)
		g.addMember(m, req.ProtocolType)
		out := wait(m)
		switch g.state {
		case stateEmpty, stateStable, stateCompleting:
			g.prepareRebalance()
		case statePreparing:
			g.maybeCompleteJoin()
		}
		return out
	}

	if req.MemberID == "" {
		if !g.compatible("", req.ProtocolType, protos) {
			return joinErr(kerr.InconsistentGroupProtocol.Code, "")
		}
		if len(g.members)+len(g.pending) >= c.cfg.MaxGroupSize {
			// Kafka's group.max.size; the ids handed out and not yet
			// joined with are seats promised, so they count.
			return joinErr(kerr.GroupMaxSizeReached.Code, "")
		}
		id := newMemberID(cl.ID)
		if req.Version >= 4 {
			// KIP-394: the member must come back with the id, so that a
			// client retrying a lost response does not leave a ghost member.
			g.addPending(id, session)
			return joinErr(kerr.MemberIDRequired.Code, id)
		}
		return addAndRebalance(id)
	}
	if g.livePending(req.MemberID) != nil {
		if !g.compatible("", req.ProtocolType, protos) {
			return joinErr(kerr.InconsistentGroupProtocol.Code, req.MemberID)
		}
		g.takePending(req.MemberID)
		return addAndRebalance(req.MemberID)
	}
	m := g.members[req.MemberID]
	if m == nil {
		return joinErr(kerr.UnknownMemberID.Code, req.MemberID)
	}
	if !g.compatible(m.id, req.ProtocolType, protos) {
		return joinErr(kerr.InconsistentGroupProtocol.Code, req.MemberID)
	}
	update := func() joinOutcome {
		m.protocols, m.session, m.rebalance = protos, session, rebalance
		m.clientID, m.clientHost = cl.ID, cl.Host
		m.awaitingJoin = true
		m.lastSeen = g.now()
		out := wait(m)
		if g.state == statePreparing {
			g.maybeCompleteJoin()
		} else {
			g.prepareRebalance()
		}
		return out
	}
	switch g.state {
	case statePreparing:
		return update()
	case stateCompleting:
		if m.matches(protos) {
			// A retried JoinGroup whose answer was lost: answer it again.
			g.touch(m)
			return joinOutcome{joinResult: g.joinAnswer(m)}
		}
		return update()
	case stateStable:
		if m.id == g.leader || !m.matches(protos) {
			return update()
		}
		g.touch(m)
		return joinOutcome{joinResult: g.joinAnswer(m)}
	}
	return joinErr(kerr.UnknownMemberID.Code, req.MemberID)
}

// SyncGroup answers a SyncGroup v0-2. Followers block until the leader's
// assignment arrives or ctx ends.
func (c *Coordinator) SyncGroup(ctx context.Context, cl Client, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	r, wait, cancel := c.sync(cl, req)
	if wait != nil {
		select {
		case r = <-wait:
		case <-ctx.Done():
			cancel()
			r = syncResult{code: kerr.CoordinatorNotAvailable.Code}
		}
	}
	resp.ErrorCode = r.code
	resp.MemberAssignment = r.assignment
	return resp
}

func (c *Coordinator) sync(cl Client, req *kmsg.SyncGroupRequest) (syncResult, chan syncResult, func()) {
	fail := func(code int16) (syncResult, chan syncResult, func()) { return syncResult{code: code}, nil, nil }
	if !validGroupID(req.Group, false) {
		return fail(kerr.InvalidGroupID.Code)
	}
	if code := c.ownerCode(cl, req.Group); code != 0 {
		return fail(code)
	}
	if c.closed.Load() {
		return fail(kerr.NotCoordinator.Code)
	}
	g := c.lookup(cl, req.Group)
	if g == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return fail(kerr.UnknownMemberID.Code)
	case req.Generation != g.generation:
		return fail(kerr.IllegalGeneration.Code)
	}
	switch g.state {
	case statePreparing:
		return fail(kerr.RebalanceInProgress.Code)
	case stateStable:
		g.touch(m)
		return syncResult{assignment: m.assignment}, nil, nil
	case stateCompleting:
	default:
		return fail(kerr.UnknownMemberID.Code)
	}
	g.touch(m)
	ch := make(chan syncResult, 1)
	m.refuseSync(kerr.RebalanceInProgress.Code)
	m.syncWait = ch
	if m.id == g.leader {
		for _, a := range req.GroupAssignment {
			if t := g.members[a.MemberID]; t != nil {
				t.assignment = slices.Clone(a.MemberAssignment)
			}
		}
		g.state = stateStable
		for _, t := range g.members {
			if t.assignment == nil {
				t.assignment = []byte{}
			}
			if t.syncWait != nil {
				t.syncWait <- syncResult{assignment: t.assignment}
				t.syncWait = nil
			}
			g.touch(t)
		}
		return <-ch, nil, nil
	}
	gen := g.generation
	cancel := func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.members[m.id] == m && m.syncWait == ch && g.generation == gen {
			m.syncWait = nil
			g.touch(m)
		}
	}
	return syncResult{}, ch, cancel
}

// Heartbeat answers a Heartbeat v0-2. In the sync phase it answers no
// error (seed 001's deliberate deviation): the member already had its
// JoinGroup answer, and telling it to rejoin would reopen the join window
// it is on the far side of. In the join phase it is REBALANCE_IN_PROGRESS,
// which is how a rebalance reaches the members that did not cause it.
func (c *Coordinator) Heartbeat(ctx context.Context, cl Client, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = c.heartbeat(cl, req)
	return resp
}

// memberGroup returns the group a request of an existing member
// (Heartbeat, LeaveGroup) names, or the code refusing it: INVALID_GROUP_ID,
// the ownership code, or UNKNOWN_MEMBER_ID for a group not held here.
func (c *Coordinator) memberGroup(cl Client, id string) (*group, int16) {
	if !validGroupID(id, false) {
		return nil, kerr.InvalidGroupID.Code
	}
	if code := c.ownerCode(cl, id); code != 0 {
		return nil, code
	}
	g := c.lookup(cl, id)
	if g == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return g, 0
}

func (c *Coordinator) heartbeat(cl Client, req *kmsg.HeartbeatRequest) int16 {
	g, code := c.memberGroup(cl, req.Group)
	if g == nil {
		return code
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch g.state {
	case stateDead:
		return kerr.CoordinatorNotAvailable.Code
	case stateEmpty:
		return kerr.UnknownMemberID.Code
	}
	m := g.members[req.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	g.touch(m)
	if g.state == statePreparing {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// LeaveGroup answers a LeaveGroup v0-2 (one member per request below v3).
func (c *Coordinator) LeaveGroup(ctx context.Context, cl Client, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	resp.ErrorCode = c.leave(cl, req)
	return resp
}

func (c *Coordinator) leave(cl Client, req *kmsg.LeaveGroupRequest) int16 {
	g, code := c.memberGroup(cl, req.Group)
	if g == nil {
		return code
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if g.takePending(req.MemberID) {
		g.maybeCompleteJoin()
		return 0
	}
	m := g.members[req.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	g.memberGone(m)
	return 0
}
