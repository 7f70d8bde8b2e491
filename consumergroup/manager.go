package consumergroup

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/internal/groupreg"
	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/queen"
)

// Kafka's defaults (GroupCoordinatorConfig).
const (
	DefaultHeartbeatInterval = 5 * time.Second  // group.consumer.heartbeat.interval.ms
	DefaultSessionTimeout    = 45 * time.Second // group.consumer.session.timeout.ms
	// DefaultMaxGroupSize is this facade's group.consumer.max.size (Kafka's
	// default is unbounded); the classic coordinator's ceiling.
	DefaultMaxGroupSize = 1000
	// DefaultMaxGroups is the classic coordinator's ceiling of groups held.
	DefaultMaxGroups = 10_000
	// topicRefresh is how often a group lists the catalogue again at a
	// heartbeat, to see topics appear, grow or go (a regular expression
	// is re-resolved then too).
	topicRefresh = time.Second
	// writeTimeout bounds a write a timer makes (no request carries it).
	writeTimeout    = 10 * time.Second
	maxGroupIDChars = 255
)

// KV is the one Queen route the package needs; *queen.Client satisfies it.
type KV = queen.KVCaller

// Topic is a topic a member may subscribe to.
type Topic = groupreg.Topic

// Topics is the caller's catalogue as a group sees it.
type Topics = groupreg.Topics

// Client is who sent a request: the client id and host ConsumerGroupDescribe
// reports, the identity that files the group (two tenants' "orders" are two
// groups), the credential its KV calls carry and its catalogue.
type Client struct {
	ID       string
	Host     string
	Identity string
	KV       KV     // nil uses the manager's
	Topics   Topics // nil lists no topics
}

// Config is how a Manager is built.
type Config struct {
	KV                KV
	Ownership         ownership.Owners // nil is ownership.Single
	Clock             clock.Timers     // nil is clock.Wall
	Log               *slog.Logger
	HeartbeatInterval time.Duration // 0 is DefaultHeartbeatInterval
	SessionTimeout    time.Duration // 0 is DefaultSessionTimeout
	MaxGroupSize      int           // 0 is DefaultMaxGroupSize
	// MaxGroups bounds the groups held in memory (0 is DefaultMaxGroups)
	// and MaxGroupsPerIdentity one identity's share of them (0 is a
	// quarter, at least 1), as the classic coordinator bounds its own: a
	// new group past either is COORDINATOR_NOT_AVAILABLE. Only groups with
	// members stay in memory.
	MaxGroups            int
	MaxGroupsPerIdentity int
	// NodeID and Incarnation go into the group's qk:fence: row when this
	// node takes a group over (cluster mode), in the coordinator's format,
	// so that the coordinator's commits recognise the fence as this
	// process's own.
	NodeID      int32
	Incarnation string
	// Fenced moves qk:fence:<group> when a group is loaded (cluster mode),
	// so that a previous owner's offset commits fail from then on.
	Fenced bool
}

// Manager is every consumer-protocol group this node coordinates. Lock
// order: mu before a group's lock, never the reverse.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Timers

	// reg is the groups held: the classic path asks Holds at every
	// commit, so ids with no rows are remembered there too.
	reg   *groupreg.Registry[*group]
	owner groupreg.Owner
	stats stats
}

// New builds a manager.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Ownership == nil {
		cfg.Ownership = ownership.Single{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.MaxGroupSize <= 0 {
		cfg.MaxGroupSize = DefaultMaxGroupSize
	}
	if cfg.MaxGroups <= 0 {
		cfg.MaxGroups = DefaultMaxGroups
	}
	if cfg.MaxGroupsPerIdentity <= 0 {
		cfg.MaxGroupsPerIdentity = max(cfg.MaxGroups/4, 1)
	}
	cfg.MaxGroupsPerIdentity = min(cfg.MaxGroupsPerIdentity, cfg.MaxGroups)
	return &Manager{cfg: cfg, log: cfg.Log, clock: cfg.Clock, reg: groupreg.New[*group](cfg.Ownership),
		owner: groupreg.Owner{Fenced: cfg.Fenced, NodeID: cfg.NodeID, Incarnation: cfg.Incarnation}}
}

func (m *Manager) kvFor(cl Client) KV {
	if cl.KV != nil {
		return cl.KV
	}
	return m.cfg.KV
}

// ownerCode is 0 when this node coordinates id, NOT_COORDINATOR when
// another does (state held here is dropped), COORDINATOR_NOT_AVAILABLE
// while ownership cannot be decided.
func (m *Manager) ownerCode(identity, id string) int16 { return m.reg.OwnerCode(identity, id) }

// forget removes g from the registry if it is still the entry for its key.
func (m *Manager) forget(g *group) { m.reg.Forget(g.key, g) }

// Lock, Unlock and Dead are the registry's view of g's lock and life.
func (g *group) Lock()      { g.mu.Lock() }
func (g *group) Unlock()    { g.mu.Unlock() }
func (g *group) Dead() bool { return g.dead }

// Kill ends this object's life: timers stop, and whoever holds it sees it
// dead and asks the registry again. The caller holds g.mu.
func (g *group) Kill() {
	g.dead = true
	g.view.Store(&epochView{dead: true})
	for _, mb := range g.members {
		mb.stopTimers()
	}
}

// DropUnowned drops every group this node no longer coordinates; cluster
// mode calls it when the live node set changes. While ownership is
// unknown nothing is dropped.
func (m *Manager) DropUnowned() { m.reg.DropUnowned() }

// lookup returns the group held in memory, or loads it from the store (a
// new owner, or a group dropped after a failed write); nil and 0 when the
// store has none either.
func (m *Manager) lookup(ctx context.Context, cl Client, id string) (*group, int16) {
	return m.reg.Lookup(ctx, groupKey{Identity: cl.Identity, ID: id}, m.loader(cl, id))
}

// create makes an empty group in memory (its rows are written with its
// first member); nil past the ceiling of groups held, or the identity's
// share of it.
func (m *Manager) create(cl Client, id string) *group {
	k := groupKey{Identity: cl.Identity, ID: id}
	return m.reg.Create(k, func(total, held int) *group {
		if total >= m.cfg.MaxGroups || held >= m.cfg.MaxGroupsPerIdentity {
			m.log.Warn("consumer group refused: the node holds its ceiling of consumer groups, or this identity its share of it", "group", id, "max_groups", m.cfg.MaxGroups, "max_groups_per_identity", m.cfg.MaxGroupsPerIdentity)
			return nil
		}
		g := newGroup(m, k, m.kvFor(cl))
		g.rows.Ver = -1 // unknown until the takeover write reads it
		g.view.Store(&epochView{})
		return g
	})
}

// acquire is lookup's group locked and alive (groupreg.Acquire): nil and
// 0 when the store has none, nil and the code when it cannot be had.
func (m *Manager) acquire(ctx context.Context, cl Client, id string) (*group, int16) {
	return groupreg.Acquire(ctx, m.reg, groupKey{Identity: cl.Identity, ID: id}, m.loader(cl, id))
}

func (m *Manager) loader(cl Client, id string) func(context.Context) (*group, int16) {
	return func(ctx context.Context) (*group, int16) { return m.load(ctx, cl, id) }
}

// memberCount is how many members g has; the caller holds g.mu.
func memberCount(g *group) int { return len(g.members) }

// Holds reports whether id is a consumer-protocol group of identity at
// this node, loading it from the store if needed, and whether it has
// members; code is the refusal when that cannot be known. For the
// coordinator's JoinGroup, ListGroups and offset checks.
func (m *Manager) Holds(ctx context.Context, identity string, kv KV, id string) (held, hasMembers bool, code int16) {
	cl := Client{Identity: identity, KV: kv}
	return groupreg.Holds(ctx, m.reg, groupKey{Identity: identity, ID: id}, m.loader(cl, id), memberCount)
}

// DeleteEmpty deletes the rows of an empty consumer-protocol group so that
// the classic protocol may take the id (Kafka converts an empty consumer
// group when a classic member joins, and DeleteGroups removes it). False
// when the group has members (NON_EMPTY_GROUP) or the delete failed; code
// is then what to answer.
func (m *Manager) DeleteEmpty(ctx context.Context, identity string, kv KV, id string) (deleted bool, code int16) {
	cl := Client{Identity: identity, KV: kv}
	deleted, code = groupreg.DeleteEmpty(ctx, m.reg, groupKey{Identity: identity, ID: id}, m.loader(cl, id), memberCount,
		func(g *group) int16 { return g.deleteRows(ctx, kv) })
	if deleted {
		m.log.Info("empty consumer group deleted", "group", id)
	}
	return deleted, code
}

// stats are the counters /metrics reads.
type stats struct {
	rebalances  atomic.Uint64 // group epoch bumps
	assignments atomic.Uint64 // target assignments computed
	assignNanos atomic.Uint64 // time spent computing them
}

func (s *stats) observeAssign(d time.Duration) {
	s.assignments.Add(1)
	s.assignNanos.Add(uint64(d.Nanoseconds()))
}

// Stats is what the manager holds, for /metrics.
type Stats struct {
	States      []StateCount // Empty, Assigning, Reconciling, Stable
	Rebalances  uint64       // group epochs bumped (a member joined, left, changed its subscription, or the subscribed topics changed)
	Assignments uint64       // target assignments computed
	AssignTime  time.Duration
	// MaxEpoch is the highest group epoch held.
	MaxEpoch int32
}

// StateCount is how many groups are in State, and their members.
type StateCount struct {
	State   string
	Groups  int
	Members int
}

// Stats reads every group, each under its own lock, held briefly.
func (m *Manager) Stats() Stats {
	order := []string{StateEmpty, StateAssigning, StateReconciling, StateStable}
	groups := map[string]int{}
	members := map[string]int{}
	var maxEpoch int32
	for _, g := range m.reg.All() {
		g.mu.Lock()
		if !g.dead {
			s := g.state()
			groups[s]++
			members[s] += len(g.members)
			maxEpoch = max(maxEpoch, g.epoch)
		}
		g.mu.Unlock()
	}
	st := Stats{Rebalances: m.stats.rebalances.Load(), Assignments: m.stats.assignments.Load(),
		AssignTime: time.Duration(m.stats.assignNanos.Load()), MaxEpoch: maxEpoch}
	for _, s := range order {
		st.States = append(st.States, StateCount{State: s, Groups: groups[s], Members: members[s]})
	}
	return st
}
