package coordinator

import (
	"container/list"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/internal/clock"
)

// Membership ceilings (seed 000 "Ceilings that are not configurable"; a
// Config may lower them, tests do).
const (
	// DefaultMaxGroupSize is Kafka's group.max.size for this coordinator:
	// the members of one group plus the member ids handed out to it with
	// MEMBER_ID_REQUIRED and not yet joined with. A new member past it is
	// refused GROUP_MAX_SIZE_REACHED, as Kafka refuses it.
	DefaultMaxGroupSize = 1000
	// DefaultMaxPendingMembers bounds the member ids handed out with
	// MEMBER_ID_REQUIRED across every group of the node. Past it the
	// oldest is forgotten (its member, joining with it, is told
	// UNKNOWN_MEMBER_ID and rejoins from scratch): a real client comes back
	// with its id within a round trip, a flood of first joins never does,
	// so a flood costs the flooder's own ids and no other group a seat.
	DefaultMaxPendingMembers = 10_000
)

// pendingMember is a member id handed out with MEMBER_ID_REQUIRED (KIP-394)
// that its member has not joined with yet. Its group holds it by id, the
// coordinator's pendingQueue in age order; it lives until its member joins
// or leaves, its session timeout passes, or the queue evicts it.
type pendingMember struct {
	g     *group
	id    string
	timer clock.Timer
	elem  *list.Element // in the coordinator's queue; nil once out of it
}

// pendingQueue is every pending member of the coordinator, oldest first.
// Its lock is taken under a group's, never the reverse.
type pendingQueue struct {
	mu  sync.Mutex
	l   list.List
	max int
}

// push adds p and returns the oldest pending member when the queue is then
// over its bound, already out of the queue: the caller drops it from its
// group.
func (q *pendingQueue) push(p *pendingMember) (evicted *pendingMember) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p.elem = q.l.PushBack(p)
	if q.l.Len() <= q.max {
		return nil
	}
	evicted = q.l.Remove(q.l.Front()).(*pendingMember)
	evicted.elem = nil
	return evicted
}

// remove takes p out of the queue and reports whether it was still in it
// (not evicted).
func (q *pendingQueue) remove(p *pendingMember) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p.elem == nil {
		return false
	}
	q.l.Remove(p.elem)
	p.elem = nil
	return true
}

// live reports whether p is still in the queue.
func (q *pendingQueue) live(p *pendingMember) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return p.elem != nil
}

// len is how many pending members the queue holds.
func (q *pendingQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.l.Len()
}

// addPending remembers a member id handed out with MEMBER_ID_REQUIRED; the
// member must join with it within its session timeout. Past the node's
// bound the oldest pending member anywhere is forgotten.
func (g *group) addPending(id string, session time.Duration) {
	p := &pendingMember{g: g, id: id}
	p.timer = g.c.clock.AfterFunc(session, func() { g.forgetPending(p) })
	g.pending[id] = p
	evicted := g.c.pending.push(p)
	if evicted == nil {
		return
	}
	g.c.evictWarn.Warn(g.c.log, g.c.clock.Now(), "member id handed out with MEMBER_ID_REQUIRED forgotten: the node holds its ceiling of such ids (a flood of first JoinGroups); its member rejoins from scratch", "group", evicted.g.key.id, "max_pending_members", g.c.pending.max)
	if evicted.g == g {
		g.dropPending(evicted)
		g.maybeCompleteJoin()
		return
	}
	// Another group's lock may not be taken under this one's.
	go evicted.g.forgetPending(evicted)
}

// forgetPending drops p from its group if it is still there (its session
// timeout passed, or the queue evicted it).
func (g *group) forgetPending(p *pendingMember) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending[p.id] == p {
		g.dropPending(p)
		g.maybeCompleteJoin()
	}
}

// dropPending removes p from the group and the queue, and reports whether
// it was still live: not evicted.
func (g *group) dropPending(p *pendingMember) bool {
	p.timer.Stop()
	delete(g.pending, p.id)
	return g.c.pending.remove(p)
}

// livePending is the pending member of id, nil when there is none or it was
// evicted (and is about to be dropped).
func (g *group) livePending(id string) *pendingMember {
	p := g.pending[id]
	if p == nil || !g.c.pending.live(p) {
		return nil
	}
	return p
}

// takePending removes id's pending member, reporting whether it was live.
func (g *group) takePending(id string) bool {
	p := g.pending[id]
	return p != nil && g.dropPending(p)
}
