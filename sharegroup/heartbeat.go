package sharegroup

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/groupreg"
)

// hbError is a refusal with Kafka's message.
type hbError = groupreg.Refusal

var refuse = groupreg.Refuse

// listing is the catalogue as listed before the group's lock was taken.
type listing struct {
	all []Topic
	err error
}

// Heartbeat answers a ShareGroupHeartbeat v1 (Kafka's
// GroupMetadataManager.shareGroupHeartbeat): a join (epoch 0, the member
// id the client chose), a leave (epoch -1), or a heartbeat at the
// member's epoch, answered with the member's epoch, the heartbeat
// interval and, when it changed or at a join, its assignment.
func (m *Manager) Heartbeat(ctx context.Context, cl Client, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	fail := func(e *hbError) *kmsg.ShareGroupHeartbeatResponse {
		resp.ErrorCode, resp.ErrorMessage = e.Code, e.Message()
		return resp
	}
	if e := validate(req); e != nil {
		return fail(e)
	}
	if code := m.reg.OwnerCode(cl.Identity, req.GroupID); code != 0 {
		return fail(&hbError{Code: code})
	}
	hb, session := m.settings(ctx, cl.KV, req.GroupID)
	var pre *listing
	g, e := groupreg.Retry(func() (*group, *hbError) {
		g, code := m.lookup(ctx, cl.Identity, cl.KV, req.GroupID)
		if code != 0 {
			return nil, &hbError{Code: code}
		}
		if g == nil {
			if e := m.notShare(ctx, cl.Identity, cl.KV, req.GroupID); e != nil {
				return nil, e
			}
			if req.MemberEpoch != 0 {
				return nil, refuse(kerr.GroupIDNotFound.Code, "Share group %s not found.", req.GroupID)
			}
			g = m.create(cl.Identity, cl.KV, req.GroupID)
		}
		pre = nil
		if cl.Topics != nil && req.MemberEpoch >= 0 && (req.SubscribedTopicNames != nil || g.listingDue(m.clock.Now())) {
			all, err := cl.Topics.All(ctx)
			pre = &listing{all: all, err: err}
		}
		return g, nil
	})
	if e != nil {
		return fail(e)
	}
	g.session = session
	e = g.heartbeat(ctx, cl, req, resp, pre, hb)
	g.mu.Unlock()
	if e != nil {
		return fail(e)
	}
	if req.MemberEpoch == leaveEpoch {
		m.memberGone(ctx, g.kv, req.GroupID, []string{req.MemberID})
	}
	return resp
}

// notShare is the refusal of a group id another group type holds.
func (m *Manager) notShare(ctx context.Context, identity string, kv KV, id string) *hbError {
	if m.cfg.Others == nil {
		return nil
	}
	held, code := m.cfg.Others(ctx, identity, kv, id)
	switch {
	case code != 0:
		return &hbError{Code: code}
	case held:
		return refuse(kerr.GroupIDNotFound.Code, "Group %s is not a share group.", id)
	}
	return nil
}

// validate is Kafka's throwIfShareGroupHeartbeatRequestIsInvalid (a
// string of blanks is empty too), plus the group id's length.
func validate(req *kmsg.ShareGroupHeartbeatRequest) *hbError {
	bad := func(msg string) *hbError { return &hbError{Code: kerr.InvalidRequest.Code, Msg: msg} }
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	if blank(req.MemberID) {
		return bad("MemberId can't be empty.")
	}
	if blank(req.GroupID) {
		return bad("GroupId can't be empty.")
	}
	if req.RackID != nil && blank(*req.RackID) {
		return bad("RackId can't be empty.")
	}
	if utf8.RuneCountInString(req.GroupID) > maxGroupIDChars {
		return &hbError{Code: kerr.InvalidGroupID.Code}
	}
	if req.MemberEpoch == 0 {
		if len(req.SubscribedTopicNames) == 0 {
			return bad("SubscribedTopicNames must be set in first request.")
		}
	} else if req.MemberEpoch < leaveEpoch {
		return bad("MemberEpoch is invalid.")
	}
	return nil
}

// heartbeat is one heartbeat against g; the caller holds g.mu.
func (g *group) heartbeat(ctx context.Context, cl Client, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse, pre *listing, hb time.Duration) *hbError {
	if req.MemberEpoch == leaveEpoch {
		return g.leave(ctx, req, resp)
	}
	mb := g.members[req.MemberID]
	if mb == nil && len(g.members) >= g.m.cfg.MaxSize {
		return refuse(kerr.GroupMaxSizeReached.Code, "The share group has reached its maximum capacity of %d members.", g.m.cfg.MaxSize)
	}
	isNew := mb == nil
	switch {
	case isNew && req.MemberEpoch != 0:
		return refuse(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", req.MemberID, g.key.ID)
	case isNew:
		mb = &member{id: strings.Clone(req.MemberID), assigned: parts{}}
		g.members[mb.id] = mb
	case req.MemberEpoch != 0:
		if e := checkEpoch(mb, req.MemberEpoch); e != nil {
			return e
		}
	}
	// A join with a member id the group holds is that member rejoining
	// (KIP-1082: the client keeps its id): it continues at its epoch and
	// is answered its whole assignment.
	prev := *mb
	changed := g.apply(mb, cl, req)
	bump := isNew || changed
	now := g.m.clock.Now()
	if bump || g.topics == nil || g.listingDue(now) {
		switch {
		case pre == nil:
			if g.topics == nil {
				g.topics = map[string]Topic{}
			}
		case pre.err != nil:
			g.m.log.Warn("share group heartbeat: listing topics failed", "group", g.key.ID, "err", pre.err)
			if g.topics == nil {
				if isNew {
					g.removeMember(mb)
					g.rows.Forget(mb.id)
				}
				g.forgetIfUnwritten()
				return &hbError{Code: codeOf(pre.err)}
			}
		default:
			if g.refreshTopics(pre.all) {
				bump = true
			}
			g.refreshed.Store(now.UnixNano())
		}
	}
	if bump {
		g.bump()
	}
	if g.epoch > g.assignmentEpoch {
		g.assignmentEpoch = g.epoch
		g.rows.MetaDirty = true
	}
	if mb.epoch != g.assignmentEpoch {
		// Share members never revoke: the member moves straight to the
		// target assignment's epoch (ShareGroupAssignmentBuilder).
		mb.prevEpoch, mb.epoch = mb.epoch, g.assignmentEpoch
		mb.assigned = g.target(mb)
	}
	mb.session.LastSeen = now
	g.armSession(mb)
	if isNew || mb.epoch != prev.epoch || !slices.Equal(mb.names, prev.names) || !mb.assigned.equal(prev.assigned) ||
		mb.clientID != prev.clientID || mb.host != prev.host || !sameRack(mb.rack, prev.rack) {
		g.rows.Put(mb.id)
	}
	if isNew {
		g.m.log.Info("member joined the share group", "group", g.key.ID, "member", mb.id, "epoch", g.epoch)
	}
	if code := g.persist(ctx); code != 0 {
		return &hbError{Code: code}
	}
	id := mb.id
	resp.MemberID = &id
	resp.MemberEpoch = mb.epoch
	resp.HeartbeatIntervalMillis = int32(hb.Milliseconds())
	if req.MemberEpoch == 0 || !mb.assigned.equal(prev.assigned) {
		resp.Assignment = assignmentOf(mb.assigned)
	}
	return nil
}

// listingDue reports whether the subscribed topics are to be listed again
// (read before the group's lock, so a steady heartbeat lists nothing).
func (g *group) listingDue(now time.Time) bool {
	return now.UnixNano()-g.refreshed.Load() >= int64(topicRefresh)
}

// checkEpoch is Kafka's throwIfShareGroupMemberEpochIsInvalid: a member
// one epoch behind is let through (the answer carrying its new epoch may
// have been lost).
func checkEpoch(mb *member, epoch int32) *hbError {
	switch {
	case epoch > mb.epoch:
		return refuse(kerr.FencedMemberEpoch.Code, "The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, mb.epoch)
	case epoch < mb.epoch && epoch != mb.prevEpoch:
		return refuse(kerr.FencedMemberEpoch.Code, "The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, mb.epoch)
	}
	return nil
}

// apply takes what the request changes (null fields are unchanged) and
// reports whether the subscription changed, which bumps the group epoch.
func (g *group) apply(mb *member, cl Client, req *kmsg.ShareGroupHeartbeatRequest) bool {
	mb.clientID, mb.host = cl.ID, cl.Host
	if req.RackID != nil && !sameRack(mb.rack, req.RackID) {
		r := strings.Clone(*req.RackID)
		mb.rack = &r
	}
	if req.SubscribedTopicNames == nil {
		return false
	}
	names := make([]string, 0, len(req.SubscribedTopicNames))
	for _, n := range req.SubscribedTopicNames {
		names = append(names, strings.Clone(n))
	}
	sort.Strings(names)
	names = slices.Compact(names)
	if slices.Equal(names, mb.names) {
		return false
	}
	mb.names = names
	g.m.log.Info("share group member updated its subscribed topics", "group", g.key.ID, "member", mb.id, "topics", names)
	return true
}

func sameRack(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// leave removes the member (epoch -1) and bumps the group epoch, as
// Kafka's shareGroupLeave does; the answer echoes the member id and -1.
func (g *group) leave(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) *hbError {
	mb := g.members[req.MemberID]
	if mb == nil {
		return refuse(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", req.MemberID, g.key.ID)
	}
	g.m.log.Info("member left the share group", "group", g.key.ID, "member", mb.id)
	g.fenceLocked(mb)
	if code := g.persist(ctx); code != 0 {
		return &hbError{Code: code}
	}
	id := mb.id
	resp.MemberID = &id
	resp.MemberEpoch = leaveEpoch
	resp.HeartbeatIntervalMillis = 0
	return nil
}

// fenceLocked removes mb, drops the topics no one subscribes to any more
// and bumps the group epoch (Kafka's shareGroupFenceMember).
func (g *group) fenceLocked(mb *member) {
	g.removeMember(mb)
	g.prune()
	g.bump()
}

// forgetIfUnwritten drops a group created here that no write made real.
func (g *group) forgetIfUnwritten() {
	if g.rows.Ver < 0 && len(g.members) == 0 {
		g.Kill()
		g.m.reg.Forget(g.key, g)
	}
}

// assignmentOf is the heartbeat answer's assignment, topics in id order.
func assignmentOf(p parts) *kmsg.ShareGroupHeartbeatResponseAssignment {
	a := kmsg.NewShareGroupHeartbeatResponseAssignment()
	a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, t := range p.sortedIDs() {
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID = t
		tp.Partitions = append([]int32(nil), p[t]...)
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return &a
}

// armSession (re)starts mb's session timer from its last heartbeat.
func (g *group) armSession(mb *member) {
	mb.session.Arm(g.m.clock, g.session, func(seq uint64) { g.sessionFired(mb, seq) })
}

// sessionFired fences mb when its session ran out; what it held is then
// released through OnMemberGone.
func (g *group) sessionFired(mb *member, seq uint64) {
	g.mu.Lock()
	if g.dead || g.members[mb.id] != mb || !mb.session.Expired(seq, g.m.clock, g.session) {
		g.mu.Unlock()
		return
	}
	g.m.log.Info("share group member session expired", "group", g.key.ID, "member", mb.id, "session_timeout", g.session)
	g.fenceLocked(mb)
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	code := g.persist(ctx)
	g.mu.Unlock()
	if code == 0 {
		g.m.memberGone(ctx, g.kv, g.key.ID, []string{mb.id})
	}
}
