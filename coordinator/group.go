package coordinator

import (
	"bytes"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/clock"
)

type state int8

const (
	stateEmpty state = iota
	statePreparing
	stateCompleting
	stateStable
	stateDead
)

// String is the state's name as ListGroups and DescribeGroups spell it.
func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparing:
		return "PreparingRebalance"
	case stateCompleting:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	}
	return "Dead"
}

type protocol struct {
	name     string
	metadata []byte // verbatim from JoinGroup
}

// joinResult is what a blocked JoinGroup is answered; the handler turns it
// into a response of the request's version.
type joinResult struct {
	code       int16
	generation int32
	ptype      string
	protocol   string
	leader     string
	memberID   string
	members    []kmsg.JoinGroupResponseMember
	// skip is JoinGroup v9's skip_assignment (KIP-814): a static leader
	// that rejoined a Stable group is told it leads, with every member's
	// metadata, but that the assignment it would compute is not wanted.
	skip bool
}

type syncResult struct {
	code       int16
	ptype      string // SyncGroup v5's protocol type and name, on success
	protocol   string
	assignment []byte
}

type member struct {
	id string
	// instanceID is the KIP-345 group.instance.id of a static member, nil
	// for a dynamic one. A static member outlives its member id: a rejoin
	// with a new id and the same instance id takes over its place.
	instanceID *string
	clientID   string
	clientHost string
	protocols  []protocol
	session    time.Duration
	rebalance  time.Duration
	lastSeen   time.Time
	assignment []byte

	// awaitingJoin: the member has (re)joined in the current join phase.
	awaitingJoin bool
	joinWait     chan joinResult // a blocked JoinGroup, nil when none
	syncWait     chan syncResult // a blocked SyncGroup, nil when none
	timer        clock.Timer
	timerSeq     uint64
}

// refuseJoin answers m's parked JoinGroup, if any, with code.
func (m *member) refuseJoin(code int16) {
	if m.joinWait != nil {
		m.joinWait <- joinResult{code: code, generation: -1, memberID: m.id}
		m.joinWait = nil
	}
}

// refuseSync answers m's parked SyncGroup, if any, with code.
func (m *member) refuseSync(code int16) {
	if m.syncWait != nil {
		m.syncWait <- syncResult{code: code}
		m.syncWait = nil
	}
}

func (m *member) matches(protos []protocol) bool {
	if len(protos) != len(m.protocols) {
		return false
	}
	for i := range protos {
		if protos[i].name != m.protocols[i].name || !bytes.Equal(protos[i].metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

func (m *member) supports(name string) bool {
	for _, p := range m.protocols {
		if p.name == name {
			return true
		}
	}
	return false
}

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// group is one group's state, all of it guarded by mu and changed only by
// the methods below. wmu serialises the group's KV writes, which are never
// made under mu so that a slow Queen call does not stall heartbeats.
type group struct {
	c   *Coordinator
	key groupKey

	mu           sync.Mutex
	state        state
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	order        []string                  // join order: leader succession and the leader's member list
	statics      map[string]string         // instance id -> member id of every static member (static.go)
	pending      map[string]*pendingMember // member ids handed out with MEMBER_ID_REQUIRED (pending.go)
	deadCode     int16                     // what a write that outlived the group answers

	joinTimer      clock.Timer
	joinSeq        uint64
	initialPhase   bool // the join phase is the initial delay of an empty group
	initialRemain  time.Duration
	newMemberAdded bool

	wmu       sync.Mutex
	fenceVer  int64
	fenceHeld bool // fenceVer was read: the takeover read is done
	claimed   bool // this group object has written the fence (claimFence)
	indexed   bool
}

func newGroup(c *Coordinator, k groupKey) *group {
	return &group{c: c, key: k, members: make(map[string]*member), statics: make(map[string]string), pending: make(map[string]*pendingMember)}
}

// otherMembersSupport is Kafka's protocol-compatibility rule: an empty
// group takes whatever type the first member brings; otherwise the type
// must match and at least one of protos must be supported by every other
// member.
func (g *group) compatible(except string, ptype string, protos []protocol) bool {
	others := 0
	for id := range g.members {
		if id != except {
			others++
		}
	}
	if others == 0 {
		return true
	}
	if ptype != g.protocolType {
		return false
	}
	for _, p := range protos {
		all := true
		for id, m := range g.members {
			if id != except && !m.supports(p.name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (g *group) now() time.Time { return g.c.clock.Now() }

// addMember admits a new member that is joining now.
func (g *group) addMember(m *member, ptype string) {
	if len(g.members) == 0 {
		g.protocolType = ptype
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	if m.instanceID != nil {
		g.statics[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	m.lastSeen = g.now()
	m.awaitingJoin = true
	if g.state == statePreparing {
		g.newMemberAdded = true
	}
}

// removeMember takes m out of the group and answers anything it was
// blocked on; it does not decide what the group does next.
func (g *group) removeMember(m *member, code int16) {
	delete(g.members, m.id)
	if m.instanceID != nil && g.statics[*m.instanceID] == m.id {
		delete(g.statics, *m.instanceID)
	}
	for i, id := range g.order {
		if id == m.id {
			g.order = append(g.order[:i], g.order[i+1:]...)
			break
		}
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerSeq++
	m.refuseJoin(code)
	m.refuseSync(code)
	if g.leader == m.id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// memberGone is a leave or an eviction: the rest of the group rebalances.
func (g *group) memberGone(m *member, reason string) {
	g.removeMember(m, kerr.UnknownMemberID.Code)
	g.afterRemoval(reason)
}

// afterRemoval is what the group does once members left: a settled group
// rebalances, a join phase may now be complete.
func (g *group) afterRemoval(reason string) {
	switch g.state {
	case stateStable, stateCompleting:
		g.prepareRebalance(reason)
	case statePreparing:
		g.maybeCompleteJoin()
	}
}

// prepareRebalance opens a join phase. From Empty it is the initial delay
// (QUEEN_KAFKA_GROUP_JOIN_DELAY_MS, extended while members keep arriving,
// never past the rebalance timeout); otherwise it waits for every member to
// rejoin, up to the largest rebalance timeout among them.
func (g *group) prepareRebalance(reason string) {
	g.c.log.Info("preparing to rebalance group", "group", g.key.id, "state", g.state.String(), "generation", g.generation, "reason", reason)
	if g.state == stateCompleting {
		// Assignments of the abandoned generation are void; members blocked
		// in SyncGroup must rejoin.
		for _, m := range g.members {
			m.assignment = nil
			m.refuseSync(kerr.RebalanceInProgress.Code)
		}
	}
	initial := g.state == stateEmpty
	g.state = statePreparing
	g.newMemberAdded = false
	timeout := g.rebalanceTimeout()
	if initial {
		delay := g.c.cfg.JoinDelay
		if delay <= 0 {
			g.completeJoin()
			return
		}
		g.initialPhase = true
		g.initialRemain = max(timeout-delay, 0)
		g.armJoinTimer(delay)
		return
	}
	g.initialPhase = false
	g.armJoinTimer(timeout)
	g.maybeCompleteJoin()
}

func (g *group) rebalanceTimeout() time.Duration {
	var t time.Duration
	for _, m := range g.members {
		t = max(t, m.rebalance)
	}
	return t
}

func (g *group) armJoinTimer(d time.Duration) {
	if g.joinTimer != nil {
		g.joinTimer.Stop()
	}
	g.joinSeq++
	seq := g.joinSeq
	g.joinTimer = g.c.clock.AfterFunc(d, func() { g.joinTimerFired(seq) })
}

func (g *group) joinTimerFired(seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if seq != g.joinSeq || g.state != statePreparing {
		return
	}
	if g.initialPhase && g.newMemberAdded && g.initialRemain > 0 {
		g.newMemberAdded = false
		d := min(g.c.cfg.JoinDelay, g.initialRemain)
		g.initialRemain -= d
		g.armJoinTimer(d)
		return
	}
	g.completeJoin()
}

// maybeCompleteJoin ends a (non-initial) join phase early once every
// member has rejoined and no handed-out member id is still outstanding.
func (g *group) maybeCompleteJoin() {
	if g.state != statePreparing || g.initialPhase {
		return
	}
	if len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if !m.awaitingJoin {
			return
		}
	}
	g.completeJoin()
}

// completeJoin closes the join phase: members that did not rejoin are
// removed, the generation advances, a protocol is chosen, and every
// rejoined member is answered (the leader with everyone's metadata).
func (g *group) completeJoin() {
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
	g.joinSeq++
	g.initialPhase = false
	for _, id := range append([]string(nil), g.order...) {
		// A static member that did not rejoin keeps its place (KIP-345):
		// only its session timeout removes it.
		if m := g.members[id]; !m.awaitingJoin && m.instanceID == nil {
			g.removeMember(m, kerr.UnknownMemberID.Code)
		}
	}
	if !g.electJoinedLeader() {
		// Only static members that have not rejoined are left: the phase
		// waits another rebalance timeout, or until their sessions end.
		g.c.log.Info("group could not complete its rebalance: no member rejoined", "group", g.key.id)
		g.armJoinTimer(g.rebalanceTimeout())
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.state = stateEmpty
		g.protocol = ""
		g.leader = ""
		return
	}
	g.c.rebalances.Add(1)
	g.protocol = g.selectProtocol()
	g.state = stateCompleting
	for _, id := range g.order {
		m := g.members[id]
		m.awaitingJoin = false
		m.assignment = nil
		g.touch(m)
		if m.joinWait != nil {
			m.joinWait <- g.joinAnswer(m)
			m.joinWait = nil
		}
	}
}

// electJoinedLeader is Kafka's maybeElectNewJoinedLeader: a leader that
// has not rejoined hands over to the first member that has. False when
// members remain and none of them rejoined.
func (g *group) electJoinedLeader() bool {
	if l := g.members[g.leader]; l != nil && l.awaitingJoin {
		return true
	}
	for _, id := range g.order {
		if g.members[id].awaitingJoin {
			g.leader = id
			return true
		}
	}
	if len(g.order) > 0 {
		return false
	}
	g.leader = ""
	return true
}

// joinAnswer is the current generation as member m is told it.
func (g *group) joinAnswer(m *member) joinResult {
	r := joinResult{generation: g.generation, ptype: g.protocolType, protocol: g.protocol, leader: g.leader, memberID: m.id}
	if m.id == g.leader {
		r.members = g.memberList()
	}
	return r
}

// memberList is every member's metadata for the chosen protocol, as the
// leader is sent it: static members that have not rejoined included.
func (g *group) memberList() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = id
		jm.InstanceID = m.instanceID
		jm.ProtocolMetadata = m.metadataFor(g.protocol)
		out = append(out, jm)
	}
	return out
}

// selectProtocol picks, among the protocols every member supports, the one
// most members list first among those candidates; a tie goes to the
// leader's earlier preference.
func (g *group) selectProtocol() string {
	ref := g.members[g.leader]
	if ref == nil {
		ref = g.members[g.order[0]]
	}
	var candidates []string
	for _, p := range ref.protocols {
		all := true
		for _, m := range g.members {
			if !m.supports(p.name) {
				all = false
				break
			}
		}
		if all {
			candidates = append(candidates, p.name)
		}
	}
	votes := make(map[string]int, len(candidates))
	for _, m := range g.members {
		for _, p := range m.protocols {
			if contains(candidates, p.name) {
				votes[p.name]++
				break
			}
		}
	}
	best := ""
	for _, name := range candidates {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// touch restarts m's session clock.
func (g *group) touch(m *member) {
	m.lastSeen = g.now()
	if m.timer == nil {
		g.armSession(m, m.session)
	}
}

func (g *group) armSession(m *member, d time.Duration) {
	m.timerSeq++
	seq := m.timerSeq
	m.timer = g.c.clock.AfterFunc(d, func() { g.sessionTimerFired(m, seq) })
}

// sessionTimerFired evicts m when its session ran out. A member blocked in
// JoinGroup or SyncGroup is kept alive: it is waiting on the coordinator,
// not silent.
func (g *group) sessionTimerFired(m *member, seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if seq != m.timerSeq || g.members[m.id] != m {
		return
	}
	if m.awaitingJoin || m.syncWait != nil {
		g.armSession(m, m.session)
		return
	}
	deadline := m.lastSeen.Add(m.session)
	if now := g.now(); now.Before(deadline) {
		g.armSession(m, deadline.Sub(now))
		return
	}
	g.c.log.Info("group member session expired, rebalancing", "group", g.key.id, "member", m.id, "instance_id", strOrNil(m.instanceID), "session_timeout", m.session)
	g.memberGone(m, "session of member "+m.id+" expired")
}

// kill marks the group Dead and answers every waiter with code.
func (g *group) kill(code int16) {
	for _, id := range append([]string(nil), g.order...) {
		g.removeMember(g.members[id], code)
	}
	for _, p := range g.pending {
		g.dropPending(p)
	}
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
	g.joinSeq++
	g.state = stateDead
	g.deadCode = code
}
