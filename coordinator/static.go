package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Static membership (KIP-345), as Kafka's classic group coordinator does
// it. A member that joins with a group.instance.id is static: it gets its
// member id at once (no MEMBER_ID_REQUIRED), it is not dropped from a join
// phase it misses (only its session timeout removes it), and a join with an
// unknown member id and a known instance id is the same consumer restarted:
// it takes over the old member id's place, assignment and leadership, and
// the old id is fenced (FENCED_INSTANCE_ID) from then on.

// validateMember is Kafka's ClassicGroup.validateMember: when the request
// names an instance id, that instance must be a member and mapped to
// memberID (FENCED_INSTANCE_ID when another member id now holds it); and
// memberID must be a member. The caller holds g.mu.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		cur, ok := g.statics[*instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case cur != memberID:
			g.c.log.Info("request of a static member fenced by its replacement", "group", g.key.id, "member", memberID, "instance_id", *instanceID, "current_member", cur)
			return kerr.FencedInstanceID.Code
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// validateCommit is Kafka's ClassicGroup.validateOffsetCommit, for
// OffsetCommit and (txn) TxnOffsetCommit: a commit naming no member and no
// generation is accepted while the group is Empty (an assign() consumer or
// an admin client), and for transactions always; anything else must be the
// current generation of a current member. The caller holds g.mu.
func (g *group) validateCommit(memberID string, instanceID *string, generation int32, txn bool) int16 {
	if g.state == stateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if generation < 0 && g.state == stateEmpty {
		return 0
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if !txn {
		return kerr.UnknownMemberID.Code
	}
	if !txn && g.state == stateCompleting {
		// The member has its JoinGroup answer and not yet its assignment.
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// replaceStatic is a static member rejoining with a new member id (a
// restart): the member under oldID is replaced by nm, which inherits its
// place in the join order, its assignment and its leadership; whatever the
// old id had parked is answered FENCED_INSTANCE_ID. In a Stable group whose
// protocol the rejoiner does not change, nothing rebalances: the rejoiner is
// answered the current generation at once (Kafka's
// updateStaticMemberThenRebalanceOrCompleteJoin). v9 and up tell a leader
// it leads with skip_assignment set (KIP-814); older versions name the
// leader as it was before the replacement, so that a restarted leader does
// not compute an assignment a Stable group would never hand out.
func (g *group) replaceStatic(oldID string, nm *member, version int16, reason string) joinOutcome {
	old := g.members[oldID]
	prevLeader := g.leader
	old.refuseJoin(kerr.FencedInstanceID.Code)
	old.refuseSync(kerr.FencedInstanceID.Code)
	if old.timer != nil {
		old.timer.Stop()
	}
	old.timerSeq++ // the old id's session ends without effect
	nm.assignment = old.assignment
	delete(g.members, oldID)
	g.members[nm.id] = nm
	for i, id := range g.order {
		if id == oldID {
			g.order[i] = nm.id
			break
		}
	}
	g.statics[*nm.instanceID] = nm.id
	if g.leader == oldID {
		g.leader = nm.id
	}
	g.c.log.Info("static member rejoined with a new member id, replacing its previous one", "group", g.key.id, "instance_id", *nm.instanceID, "member", nm.id, "previous_member", oldID, "state", g.state.String(), "reason", reason)

	switch g.state {
	case stateStable:
		if g.selectProtocol() == g.protocol {
			g.touch(nm)
			r := joinResult{generation: g.generation, ptype: g.protocolType, protocol: g.protocol, memberID: nm.id, leader: prevLeader}
			if version >= 9 {
				r.leader = g.leader
				if nm.id == g.leader {
					r.members, r.skip = g.memberList(), true
				}
			}
			return joinOutcome{joinResult: r}
		}
		out := g.park(nm)
		g.prepareRebalance("static member " + nm.id + " changed the group's protocol; client reason: " + reason)
		return out
	case stateCompleting:
		// The leader may already be assigning to the old id: the
		// assignment would miss the new one, so the group rejoins.
		out := g.park(nm)
		g.prepareRebalance("static member " + nm.id + " rejoined while the group was syncing; client reason: " + reason)
		return out
	}
	out := g.park(nm)
	g.maybeCompleteJoin()
	return out
}

// park marks m joined in the current phase and parks its JoinGroup.
func (g *group) park(m *member) joinOutcome {
	m.refuseJoin(kerr.RebalanceInProgress.Code) // a previous JoinGroup of this member is still parked
	m.awaitingJoin = true
	m.lastSeen = g.now()
	ch := make(chan joinResult, 1)
	m.joinWait = ch
	return joinOutcome{wait: ch}
}

// strOrNil is a *string for a log line.
func strOrNil(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
