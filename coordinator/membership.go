package coordinator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup answers a JoinGroup v0-9, blocking until the join phase it
// entered completes or ctx ends. A Kafka broker parks the request the same
// way and answers nothing else on that connection meanwhile. v5 brings
// group_instance_id (static membership, static.go), v7 the protocol type in
// the answer, v8 the client's reason (logged with the rebalance it causes),
// v9 skip_assignment.
func (c *Coordinator) JoinGroup(ctx context.Context, cl Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if code := c.classicOnly(ctx, cl, req.Group); code != 0 {
		resp.ErrorCode, resp.Generation, resp.MemberID = code, -1, req.MemberID
		return resp
	}
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
	resp.SkipAssignment = r.skip
	if r.code == 0 {
		p, pt := r.protocol, r.ptype
		resp.Protocol, resp.ProtocolType = &p, &pt
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

// joinReason is v8's client reason, or what Kafka logs without one.
func joinReason(req *kmsg.JoinGroupRequest) string {
	if req.Reason != nil && *req.Reason != "" {
		return *req.Reason
	}
	return "not provided"
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
	var instance *string
	if req.InstanceID != nil {
		s := strings.Clone(*req.InstanceID)
		instance = &s
	}
	reason := joinReason(req)

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
		return &member{id: id, instanceID: instance, clientID: cl.ID, clientHost: cl.Host, protocols: protos, session: session, rebalance: rebalance}
	}
	addAndRebalance := func(id string) joinOutcome {
		m := newMember(id)
		g.addMember(m, req.ProtocolType)
		out := g.park(m)
		switch g.state {
		case stateEmpty, stateStable, stateCompleting:
			g.prepareRebalance("adding member " + id + " with instance id " + fmt.Sprint(strOrNil(instance)) + "; client reason: " + reason)
		case statePreparing:
			g.maybeCompleteJoin()
		}
		return out
	}

	if req.MemberID == "" {
		if !g.compatible("", req.ProtocolType, protos) {
			return joinErr(kerr.InconsistentGroupProtocol.Code, "")
		}
		if instance != nil {
			if old, ok := g.statics[*instance]; ok {
				// A restart: no new seat, so no size check.
				return g.replaceStatic(old, newMember(newMemberID(*instance)), req.Version, reason)
			}
		}
		if len(g.members)+len(g.pending) >= c.cfg.MaxGroupSize {
			// Kafka's group.max.size; the ids handed out and not yet
			// joined with are seats promised, so they count, and so does
			// every static member, joined or not.
			return joinErr(kerr.GroupMaxSizeReached.Code, "")
		}
		if instance != nil {
			// A static member is known by its instance id: it is admitted
			// at once, with Kafka's instance-prefixed member id.
			return addAndRebalance(newMemberID(*instance))
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
	if instance == nil && g.livePending(req.MemberID) != nil {
		if !g.compatible("", req.ProtocolType, protos) {
			return joinErr(kerr.InconsistentGroupProtocol.Code, req.MemberID)
		}
		g.takePending(req.MemberID)
		return addAndRebalance(req.MemberID)
	}
	if code := g.validateMember(req.MemberID, instance); code != 0 {
		return joinErr(code, req.MemberID)
	}
	m := g.members[req.MemberID]
	if !g.compatible(m.id, req.ProtocolType, protos) {
		return joinErr(kerr.InconsistentGroupProtocol.Code, req.MemberID)
	}
	update := func(why string) joinOutcome {
		m.protocols, m.session, m.rebalance = protos, session, rebalance
		m.clientID, m.clientHost = cl.ID, cl.Host
		out := g.park(m)
		if g.state == statePreparing {
			g.maybeCompleteJoin()
		} else {
			g.prepareRebalance(why + "; client reason: " + reason)
		}
		return out
	}
	switch g.state {
	case statePreparing:
		return update("member " + m.id + " joining during the rebalance")
	case stateCompleting:
		if m.matches(protos) {
			// A retried JoinGroup whose answer was lost: answer it again.
			g.touch(m)
			return joinOutcome{joinResult: g.joinAnswer(m)}
		}
		return update("member " + m.id + " changed its metadata during the sync phase")
	case stateStable:
		if m.id == g.leader {
			// The leader's rejoin is how it asks for a rebalance (a topic
			// change its metadata does not show).
			return update("leader " + m.id + " rejoining")
		}
		if !m.matches(protos) {
			return update("member " + m.id + " changed its metadata")
		}
		g.touch(m)
		return joinOutcome{joinResult: g.joinAnswer(m)}
	}
	return joinErr(kerr.UnknownMemberID.Code, req.MemberID)
}

// SyncGroup answers a SyncGroup v0-5. Followers block until the leader's
// assignment arrives or ctx ends. v3 brings group_instance_id (checked as
// Kafka checks it), v5 the protocol type and name, which must match the
// group's when sent and are answered on success.
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
	if r.code == 0 {
		pt, p := r.ptype, r.protocol
		resp.ProtocolType, resp.Protocol = &pt, &p
	}
	return resp
}

// protocolInconsistent is Kafka's rule for SyncGroup v5's protocol type and
// name: absent on either side is no conflict.
func protocolInconsistent(req *string, group string) bool {
	return req != nil && group != "" && *req != group
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
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return fail(code)
	}
	m := g.members[req.MemberID]
	switch {
	case req.Generation != g.generation:
		return fail(kerr.IllegalGeneration.Code)
	case protocolInconsistent(req.ProtocolType, g.protocolType), protocolInconsistent(req.Protocol, g.protocol):
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	ok := func(a []byte) syncResult {
		return syncResult{ptype: g.protocolType, protocol: g.protocol, assignment: a}
	}
	switch g.state {
	case statePreparing:
		return fail(kerr.RebalanceInProgress.Code)
	case stateStable:
		// A restarted static member gets the assignment it had, and so
		// does a static leader told to skip assigning (its plan, if it
		// sent one, is not applied to a Stable group).
		g.touch(m)
		return ok(m.assignment), nil, nil
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
				t.syncWait <- ok(t.assignment)
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

// Heartbeat answers a Heartbeat v0-4 (v3: group_instance_id, fenced as
// Kafka fences it). In the sync phase it answers no error (seed 001's
// deliberate deviation, and today's Kafka too): the member already had its
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
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	m := g.members[req.MemberID]
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	g.touch(m)
	if g.state == statePreparing {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// LeaveGroup answers a LeaveGroup v0-5: one member per request below v3,
// several from v3 on, each answered its own code (v4 is flexible, v5 adds a
// reason per member, logged). A member named by instance id alone is
// removed by it (Kafka's administrative removal of a static member); one
// named by both must match, or it is FENCED_INSTANCE_ID. Below v3 the one
// code is the first failure, as Kafka folds it.
func (c *Coordinator) LeaveGroup(ctx context.Context, cl Client, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = req.MemberID
		leaving = []kmsg.LeaveGroupRequestMember{lm}
	}
	top, members := c.leave(cl, req.Group, leaving)
	if req.Version >= 3 {
		resp.ErrorCode, resp.Members = top, members
		return resp
	}
	resp.ErrorCode = top
	for _, m := range members {
		if resp.ErrorCode == 0 {
			resp.ErrorCode = m.ErrorCode
		}
	}
	return resp
}

func (c *Coordinator) leave(cl Client, group string, leaving []kmsg.LeaveGroupRequestMember) (int16, []kmsg.LeaveGroupResponseMember) {
	answer := func(lm kmsg.LeaveGroupRequestMember, code int16) kmsg.LeaveGroupResponseMember {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = lm.MemberID, lm.InstanceID, code
		return rm
	}
	out := make([]kmsg.LeaveGroupResponseMember, 0, len(leaving))
	g, code := c.memberGroup(cl, group)
	if g == nil {
		if code != kerr.UnknownMemberID.Code {
			return code, nil
		}
		// A group not held here: every member is unknown (Kafka's answer
		// for a group it does not have).
		for _, lm := range leaving {
			out = append(out, answer(lm, code))
		}
		return 0, out
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code, nil
	}
	var removed []string
	pendingLeft := false
	for _, lm := range leaving {
		reason := "not provided"
		if lm.Reason != nil && *lm.Reason != "" {
			reason = *lm.Reason
		}
		id := lm.MemberID
		switch {
		case id == "":
			cur, ok := "", false
			if lm.InstanceID != nil {
				cur, ok = g.statics[*lm.InstanceID]
			}
			if !ok {
				out = append(out, answer(lm, kerr.UnknownMemberID.Code))
				continue
			}
			id = cur
		case g.takePending(id):
			pendingLeft = true
			c.log.Info("pending member left the group", "group", group, "member", id, "reason", reason)
			out = append(out, answer(lm, 0))
			continue
		default:
			if code := g.validateMember(id, lm.InstanceID); code != 0 {
				out = append(out, answer(lm, code))
				continue
			}
		}
		m := g.members[id]
		c.log.Info("member left the group", "group", group, "member", id, "instance_id", strOrNil(m.instanceID), "reason", reason)
		g.removeMember(m, kerr.UnknownMemberID.Code)
		removed = append(removed, id)
		out = append(out, answer(lm, 0))
	}
	switch {
	case len(removed) > 0:
		g.afterRemoval("explicit LeaveGroup of " + strings.Join(removed, ", "))
	case pendingLeft:
		g.maybeCompleteJoin()
	}
	return 0, out
}

// classicOnly refuses a JoinGroup for a share group, and for a consumer-protocol group with
// members INCONSISTENT_GROUP_PROTOCOL, as Kafka does when a group exists
// with the other protocol; an empty one is deleted and the id becomes
// classic (Kafka converts an empty consumer group on a classic join).
func (c *Coordinator) classicOnly(ctx context.Context, cl Client, group string) int16 {
	if !validGroupID(group, false) || c.ownerCode(cl, group) != 0 {
		return 0 // join answers those itself
	}
	// A share group's id is never converted (Kafka's classicGroupJoin:
	// "Group exists but it's not a consumer group").
	if held, _, code := c.shareHeld(ctx, cl, group); code != 0 || held {
		if held {
			return kerr.InconsistentGroupProtocol.Code
		}
		return code
	}
	if c.cfg.Consumer == nil {
		return 0
	}
	held, members, code := c.consumerHeld(ctx, cl, group)
	switch {
	case code != 0:
		return code
	case !held:
		return 0
	case members:
		return kerr.InconsistentGroupProtocol.Code
	}
	if _, code := c.cfg.Consumer.DeleteEmpty(ctx, cl.Identity, cl.KV, group); code != 0 {
		if code == kerr.NonEmptyGroup.Code {
			return kerr.InconsistentGroupProtocol.Code
		}
		return code
	}
	return 0
}
