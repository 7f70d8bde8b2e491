package consumergroup

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/assignor"
	"github.com/queen-mq/queen-kafka/internal/groupreg"
)

// hbError is a refusal with Kafka's message.
type hbError = groupreg.Refusal

var refuse = groupreg.Refuse

// Heartbeat answers a ConsumerGroupHeartbeat v0-1 (Kafka's
// GroupMetadataManager.consumerGroupHeartbeat). The caller has already
// made sure that a join (epoch 0) of a group this package does not hold
// does not take the id of a classic group with members (Classic).
func (m *Manager) Heartbeat(ctx context.Context, cl Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(e *hbError) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode, resp.ErrorMessage = e.Code, e.Message()
		return resp
	}
	if e := m.validate(req); e != nil {
		return fail(e)
	}
	if code := m.ownerCode(cl.Identity, req.Group); code != 0 {
		return fail(&hbError{Code: code})
	}
	var pre *listing
	g, e := groupreg.Retry(func() (*group, *hbError) {
		g, code := m.lookup(ctx, cl, req.Group)
		if code != 0 {
			return nil, &hbError{Code: code}
		}
		if g == nil {
			if req.MemberEpoch != 0 {
				return nil, refuse(kerr.GroupIDNotFound.Code, "Consumer group %s not found.", req.Group)
			}
			if g = m.create(cl, req.Group); g == nil {
				return nil, &hbError{Code: kerr.CoordinatorNotAvailable.Code}
			}
		}
		pre = nil
		if cl.Topics != nil && req.MemberEpoch >= 0 && g.listingDue(req) {
			all, err := cl.Topics.All(ctx)
			pre = &listing{all: all, err: err}
		}
		return g, nil
	})
	if e != nil {
		return fail(e)
	}
	out, e := g.heartbeat(ctx, cl, req, pre)
	g.mu.Unlock()
	if e != nil {
		return fail(e)
	}
	return out
}

// validate is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (m *Manager) validate(req *kmsg.ConsumerGroupHeartbeatRequest) *hbError {
	bad := func(msg string) *hbError { return &hbError{Code: kerr.InvalidRequest.Code, Msg: msg} }
	if (req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == leaveEpoch) && req.MemberID == "" {
		return bad("MemberId can't be empty.")
	}
	if req.Group == "" {
		return bad("GroupId can't be empty.")
	}
	if utf8.RuneCountInString(req.Group) > maxGroupIDChars {
		return &hbError{Code: kerr.InvalidGroupID.Code}
	}
	if req.InstanceID != nil && *req.InstanceID == "" {
		return bad("InstanceId can't be empty.")
	}
	if req.RackID != nil && *req.RackID == "" {
		return bad("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return bad("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return bad("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return bad("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case req.MemberEpoch == staticLeaveEpoch:
		if req.InstanceID == nil {
			return bad("InstanceId can't be null.")
		}
	case req.MemberEpoch < staticLeaveEpoch:
		return bad("MemberEpoch is invalid.")
	}
	if req.ServerAssignor != nil {
		if _, ok := assignor.ByName(*req.ServerAssignor); !ok {
			return refuse(kerr.UnsupportedAssignor.Code, "ServerAssignor %s is not supported. Supported assignors: uniform, range.", *req.ServerAssignor)
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := regexp.Compile(*req.SubscribedTopicRegex); err != nil {
			return refuse(kerr.InvalidRegularExpression.Code, "SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *req.SubscribedTopicRegex, err)
		}
	}
	return nil
}

// heartbeat is one heartbeat against g; the caller holds g.mu.
func (g *group) heartbeat(ctx context.Context, cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, pre *listing) (*kmsg.ConsumerGroupHeartbeatResponse, *hbError) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return g.leave(ctx, req, resp)
	}
	now := g.m.clock.Now()
	owned, ownedKnown := g.ownedOf(req)

	m, isNew, replaced, e := g.resolveMember(cl, req, owned, ownedKnown)
	if e != nil {
		return nil, e
	}
	prev := snapshot(m)
	// reason is built only when the epoch bumps: a steady heartbeat must
	// not pay for the string. Empty with bump set means isNew (joined).
	bump := isNew
	reason := ""
	if changed := g.applyRequest(m, cl, req); changed {
		bump = true
		reason = "member " + m.id + " changed its subscription"
	}
	if replaced != "" && !bump {
		g.m.log.Info("static member rejoined, replacing its previous member id", "group", g.key.ID, "instance_id", strOr(m.instanceID), "member", m.id, "previous_member", replaced)
	}

	// The subscribed topics: listed again when something changed or the
	// last listing is older than topicRefresh (topics appear and widen).
	if bump || g.topics == nil || now.Sub(g.refreshed) >= topicRefresh {
		if pre == nil && cl.Topics != nil {
			// Not listed before the lock (a subscription the request did
			// not predict): list now.
			all, err := cl.Topics.All(ctx)
			pre = &listing{all: all, err: err}
		}
		switch {
		case pre == nil:
			if g.topics == nil {
				g.topics = map[string]topicMeta{}
			}
		case pre.err != nil:
			g.m.log.Warn("consumer group heartbeat: listing topics failed", "group", g.key.ID, "err", pre.err)
			if g.topics == nil {
				g.rollbackNew(m, isNew)
				return nil, &hbError{Code: codeOf(pre.err)}
			}
		default:
			if g.refreshTopics(pre.all) && !bump {
				bump = true
				reason = "the subscribed topics' metadata changed"
			}
		}
	}
	if bump {
		if reason == "" {
			reason = "member " + m.id + " joined"
		}
		g.bump(reason)
	}
	if g.epoch > g.assignmentEpoch {
		g.computeTarget()
	}

	// Reconcile the member towards its target.
	if m.epoch != g.assignmentEpoch || m.state != stateStable {
		nx := reconcile(m, g.assignmentEpoch, g.target[m.id], owned, ownedKnown, g.ownerOf)
		if nx.epoch != m.epoch {
			m.prevEpoch = m.epoch
		}
		m.epoch, m.state = nx.epoch, nx.state
		g.setOwned(m, nx.assigned, nx.revoking)
	}
	m.session.LastSeen = now
	g.armSession(m)
	changed := !prev.same(m)
	if changed {
		g.markDirty(m.id)
		if m.state == stateUnrevoked {
			g.armRebalance(m)
		} else {
			m.cancelRebalance()
		}
	}
	if code := g.persist(ctx); code != 0 {
		return nil, &hbError{Code: code}
	}

	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.m.cfg.HeartbeatInterval.Milliseconds())
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.MemberEpoch == 0 || full || !prev.assigned.equal(m.assigned) {
		resp.Assignment = assignmentOf(m.assigned)
	}
	return resp, nil
}

// ownedOf is the partitions the request says the member owns, and whether
// it said (null is "unchanged since the last heartbeat").
func (g *group) ownedOf(req *kmsg.ConsumerGroupHeartbeatRequest) (parts, bool) {
	if req.Topics == nil {
		return nil, false
	}
	raw := map[topicID][]int32{}
	for _, t := range req.Topics {
		raw[t.TopicID] = append(raw[t.TopicID], t.Partitions...)
	}
	return partsOf(raw), true
}

// resolveMember finds or makes the member a heartbeat is for, as Kafka's
// getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember do. replaced is
// the member id a static member's rejoin took over.
func (g *group) resolveMember(cl Client, req *kmsg.ConsumerGroupHeartbeatRequest, owned parts, ownedKnown bool) (m *member, isNew bool, replaced string, e *hbError) {
	memberID := req.MemberID
	full := func() *hbError {
		if len(g.members) >= g.m.cfg.MaxGroupSize {
			return refuse(kerr.GroupMaxSizeReached.Code, "The consumer group has reached its maximum capacity of %d members.", g.m.cfg.MaxGroupSize)
		}
		return nil
	}
	newMember := func() *member {
		if memberID == "" {
			memberID = newMemberID()
		}
		nm := &member{id: memberID, clientID: cl.ID, clientHost: cl.Host, assigned: parts{}, revoking: parts{}}
		g.members[nm.id] = nm
		g.target[nm.id] = parts{}
		return nm
	}
	if req.InstanceID == nil {
		if req.MemberEpoch == 0 {
			if existing := g.members[memberID]; memberID != "" && existing != nil {
				return existing, false, "", nil
			}
			if e := full(); e != nil {
				return nil, false, "", e
			}
			return newMember(), true, "", nil
		}
		existing := g.members[memberID]
		if existing == nil {
			return nil, false, "", refuse(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", memberID, g.key.ID)
		}
		if e := checkEpoch(existing, req.MemberEpoch, owned, ownedKnown); e != nil {
			return nil, false, "", e
		}
		return existing, false, "", nil
	}

	instance := *req.InstanceID
	existingID, known := g.statics[instance]
	existing := g.members[existingID]
	if req.MemberEpoch == 0 {
		if !known || existing == nil {
			if e := full(); e != nil {
				return nil, false, "", e
			}
			nm := newMember()
			s := strings.Clone(instance)
			nm.instanceID = &s
			g.statics[instance] = nm.id
			return nm, true, "", nil
		}
		if existing.id == memberID && existing.epoch != staticLeaveEpoch {
			return existing, false, "", nil // a rejoin of the same member id
		}
		if existing.epoch != staticLeaveEpoch {
			return nil, false, "", refuse(kerr.UnreleasedInstanceID.Code, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", memberID, instance, existing.id)
		}
		// The static member left temporarily and is back (with a new
		// member id or its old one): it takes over the old member's
		// place, assignment and target, without a new group epoch.
		if memberID == "" {
			memberID = newMemberID()
		}
		nm := *existing
		nm.id = memberID
		nm.epoch, nm.prevEpoch = 0, 0
		nm.session, nm.rebalanceTimer = groupreg.Session{LastSeen: existing.session.LastSeen}, nil
		nm.clientID, nm.clientHost = cl.ID, cl.Host
		assigned, revoking, target := existing.assigned, existing.revoking, g.target[existing.id]
		g.removeMember(existing)
		nm.assigned, nm.revoking = parts{}, parts{}
		g.members[nm.id] = &nm
		g.statics[instance] = nm.id
		g.target[nm.id] = target
		g.setOwned(&nm, assigned, revoking)
		g.markDirty(nm.id)
		g.rows.MetaDirty = true
		return &nm, false, existing.id, nil
	}
	if !known || existing == nil {
		return nil, false, "", refuse(kerr.UnknownMemberID.Code, "Instance id %s is unknown.", instance)
	}
	if existing.id != memberID {
		return nil, false, "", refuse(kerr.FencedInstanceID.Code, "Static member %s with instance id %s was fenced by member %s.", memberID, instance, existing.id)
	}
	if e := checkEpoch(existing, req.MemberEpoch, owned, ownedKnown); e != nil {
		return nil, false, "", e
	}
	return existing, false, "", nil
}

// checkEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: a member
// one epoch behind whose owned partitions are within its assignment is let
// through (its answer carrying the new epoch may have been lost).
func checkEpoch(m *member, epoch int32, owned parts, ownedKnown bool) *hbError {
	switch {
	case epoch > m.epoch:
		return refuse(kerr.FencedMemberEpoch.Code, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	case epoch < m.epoch:
		if epoch != m.prevEpoch || !ownedKnown || !subset(owned, m.assigned) {
			return refuse(kerr.FencedMemberEpoch.Code, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
		}
	}
	return nil
}

func subset(a, b parts) bool {
	for t, ps := range a {
		for _, n := range ps {
			if !b.has(t, n) {
				return false
			}
		}
	}
	return true
}

// applyRequest takes what the request changes (null fields are
// unchanged) and reports whether the subscription changed, which bumps
// the group epoch: topics, regex, assignor or rack.
func (g *group) applyRequest(m *member, cl Client, req *kmsg.ConsumerGroupHeartbeatRequest) bool {
	changed := false
	if req.RebalanceTimeoutMillis > 0 {
		m.rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.MemberEpoch == 0 {
		m.clientID, m.clientHost = cl.ID, cl.Host
	}
	if req.RackID != nil && (m.rack == nil || *m.rack != *req.RackID) {
		r := strings.Clone(*req.RackID)
		m.rack, changed = &r, true
	}
	if req.SubscribedTopicNames != nil {
		names := make([]string, 0, len(req.SubscribedTopicNames))
		for _, n := range req.SubscribedTopicNames {
			names = append(names, strings.Clone(n))
		}
		sort.Strings(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.names) {
			m.names, changed = names, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex, changed = strings.Clone(*req.SubscribedTopicRegex), true
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor, changed = strings.Clone(*req.ServerAssignor), true
	}
	return changed
}

// rollbackNew takes back a member made by a heartbeat that then failed.
func (g *group) rollbackNew(m *member, isNew bool) {
	if isNew {
		g.removeMember(m)
		g.rows.Forget(m.id)
	}
}

// leave is epoch -1 (leave for good: the group rebalances) or -2 (a static
// member's temporary leave: it keeps its place and assignment until its
// session ends or it rejoins).
func (g *group) leave(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) (*kmsg.ConsumerGroupHeartbeatResponse, *hbError) {
	var m *member
	if req.InstanceID != nil {
		id, ok := g.statics[*req.InstanceID]
		m = g.members[id]
		if !ok || m == nil {
			return nil, refuse(kerr.UnknownMemberID.Code, "Instance id %s is unknown.", *req.InstanceID)
		}
		if m.id != req.MemberID {
			return nil, refuse(kerr.FencedInstanceID.Code, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, m.id)
		}
	} else if m = g.members[req.MemberID]; m == nil {
		return nil, refuse(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", req.MemberID, g.key.ID)
	}
	if req.MemberEpoch == staticLeaveEpoch {
		if m.epoch != staticLeaveEpoch {
			m.prevEpoch, m.epoch = m.epoch, staticLeaveEpoch
			m.cancelRebalance()
			g.markDirty(m.id)
			g.m.log.Info("static member left the consumer group temporarily", "group", g.key.ID, "member", m.id, "instance_id", *m.instanceID)
		}
	} else {
		g.removeMember(m)
		g.bump("member " + m.id + " left the group")
	}
	if code := g.persist(ctx); code != 0 {
		return nil, &hbError{Code: code}
	}
	id := req.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = req.MemberEpoch
	return resp, nil
}

// assignmentOf is a member's assigned partitions as the answer carries them.
func assignmentOf(p parts) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	for _, t := range p.topics() {
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID = t
		at.Partitions = slices.Clone(p[t])
		a.Topics = append(a.Topics, at)
	}
	return &a
}

// memberSnapshot is what decides whether a heartbeat changed a member.
type memberSnapshot struct {
	epoch, prevEpoch   int32
	state              memberState
	assigned, revoking parts
	rack               string
	names              []string
	regex, assignor    string
	rebalance          time.Duration
	clientID, host     string
}

func snapshot(m *member) memberSnapshot {
	return memberSnapshot{epoch: m.epoch, prevEpoch: m.prevEpoch, state: m.state, assigned: m.assigned, revoking: m.revoking,
		rack: strOr(m.rack), names: m.names, regex: m.regex, assignor: m.assignor, rebalance: m.rebalance, clientID: m.clientID, host: m.clientHost}
}

func (s memberSnapshot) same(m *member) bool {
	return s.epoch == m.epoch && s.prevEpoch == m.prevEpoch && s.state == m.state && s.assigned.equal(m.assigned) && s.revoking.equal(m.revoking) &&
		s.rack == strOr(m.rack) && slices.Equal(s.names, m.names) && s.regex == m.regex && s.assignor == m.assignor &&
		s.rebalance == m.rebalance && s.clientID == m.clientID && s.host == m.clientHost
}

// newMemberID is a random UUID in Kafka's Uuid.toString form (base64url,
// unpadded), for v0 members that send none.
func newMemberID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
