package sharegroup

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-mq/queen-kafka/internal/groupreg"
)

// State names (Kafka's ShareGroup.ShareGroupState).
const (
	StateEmpty  = "Empty"
	StateStable = "Stable"
	StateDead   = "Dead"
)

const leaveEpoch = -1

// group is one share group this node coordinates.
type group struct {
	m   *Manager
	key groupKey
	kv  KV

	mu   sync.Mutex
	dead bool
	// epoch is the group epoch (bumped when a member joins, leaves or
	// changes its subscription, or a subscribed topic changes);
	// assignmentEpoch the epoch of the target assignment. The simple
	// assignor's target is a function of a member's subscription and
	// topics, so it is computed when asked, never stored.
	epoch, assignmentEpoch int32
	// rows is what the next write writes, and the meta row's version.
	rows groupreg.Rows
	// topics is the subscription metadata: every topic some member
	// subscribes to that exists, with its id and width.
	topics map[string]Topic
	// refreshed is when the catalogue was last listed (unix nanoseconds).
	refreshed atomic.Int64
	members   map[string]*member
	// session is the session timeout the last heartbeat resolved.
	session time.Duration
}

type member struct {
	id               string
	rack             *string
	clientID, host   string
	epoch, prevEpoch int32
	names            []string
	assigned         parts
	session          groupreg.Session
}

// parts is an assignment: topic id to its partitions, ascending.
type parts map[[16]byte][]int32

func (p parts) equal(o parts) bool { return maps.EqualFunc(p, o, slices.Equal[[]int32]) }

func newGroup(m *Manager, k groupKey, kv KV) *group {
	return &group{m: m, key: k, kv: kv, members: map[string]*member{}, session: m.cfg.SessionTimeout}
}

// Lock, Unlock and Dead are the registry's view of g's lock and life.
func (g *group) Lock()      { g.mu.Lock() }
func (g *group) Unlock()    { g.mu.Unlock() }
func (g *group) Dead() bool { return g.dead }

// Kill ends this object's life: timers stop, and whoever holds it sees it
// dead and asks the registry again. The caller holds g.mu.
func (g *group) Kill() {
	g.dead = true
	for _, mb := range g.members {
		mb.session.Stop()
	}
}

func (g *group) state() string {
	if len(g.members) == 0 {
		return StateEmpty
	}
	return StateStable
}

// target is the simple share assignor's answer for mb: every partition of
// every topic it subscribes to that exists.
func (g *group) target(mb *member) parts {
	out := parts{}
	for _, n := range mb.names {
		t, ok := g.topics[n]
		if !ok || t.Partitions <= 0 {
			continue
		}
		ps := make([]int32, t.Partitions)
		for i := range ps {
			ps[i] = int32(i)
		}
		out[t.ID] = ps
	}
	return out
}

// subscribed is every topic name some member subscribes to.
func (g *group) subscribed() map[string]bool {
	out := map[string]bool{}
	for _, mb := range g.members {
		for _, n := range mb.names {
			out[n] = true
		}
	}
	return out
}

// prune drops from the subscription metadata the topics no member
// subscribes to any more (a member left); it reports whether it changed.
func (g *group) prune() bool {
	want := g.subscribed()
	changed := false
	for n := range g.topics {
		if !want[n] {
			delete(g.topics, n)
			changed = true
		}
	}
	return changed
}

// refreshTopics recomputes the subscription metadata from the catalogue's
// topics and reports whether it changed.
func (g *group) refreshTopics(all []Topic) bool {
	want := g.subscribed()
	next := map[string]Topic{}
	for _, t := range all {
		if want[t.Name] {
			next[t.Name] = t
		}
	}
	changed := len(next) != len(g.topics)
	for n, t := range next {
		if o, ok := g.topics[n]; !ok || o != t {
			changed = true
		}
	}
	g.topics = next
	return changed
}

func (g *group) removeMember(mb *member) {
	mb.session.Stop()
	delete(g.members, mb.id)
	g.rows.Delete(mb.id)
}

// bump moves the group epoch (the target assignment follows at the next
// heartbeat).
func (g *group) bump() {
	g.epoch++
	g.rows.MetaDirty = true
}

func (g *group) memberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// topicName is the name of the topic with id in the subscription
// metadata ("" once it is gone).
func (g *group) topicName(id [16]byte) string {
	for n, t := range g.topics {
		if t.ID == id {
			return n
		}
	}
	return ""
}

// sortedIDs is p's topic ids in a stable order.
func (p parts) sortedIDs() [][16]byte {
	ids := make([][16]byte, 0, len(p))
	for t := range p {
		ids = append(ids, t)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	return ids
}
