package coordinator

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/internal/ratelog"
	"github.com/queen-mq/queen-kafka/ownership"
)

// Ceilings of seed 000 ("Ceilings that are not configurable").
const (
	DefaultMaxGroups = 10_000
	maxGroupIDChars  = 255
)

// Config is how a Coordinator is built. Zero durations are legitimate for
// JoinDelay only; the session bounds must be set.
type Config struct {
	KV        KV               // the node's own credential; a Client may override it
	Ownership ownership.Owners // nil is ownership.Single with a zero Broker
	Clock     clock.Timers     // nil is clock.Wall
	Log       *slog.Logger

	JoinDelay         time.Duration // QUEEN_KAFKA_GROUP_JOIN_DELAY_MS
	MinSessionTimeout time.Duration // QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS
	MaxSessionTimeout time.Duration // QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS
	MaxGroups         int           // 0 is DefaultMaxGroups
	// MaxGroupsPerIdentity is one identity's share of MaxGroups (0 is a
	// quarter of it, at least 1; more is all of it), so that one tenant or
	// credential creating groups without end cannot take the room every
	// other one needs. Where every client is one identity (no SASL), the
	// share is the whole ceiling.
	MaxGroupsPerIdentity int
	MaxGroupSize         int // 0 is DefaultMaxGroupSize
	MaxPendingMembers    int // 0 is DefaultMaxPendingMembers

	// Fenced puts the qk:fence:<group> compare-and-set at op 0 of every
	// offset write (cluster mode, §10). NodeID and Incarnation are written
	// into the fence so that a node recognises its own.
	Fenced      bool
	NodeID      int32
	Incarnation string

	// Consumer is the node's KIP-848 consumer-protocol groups (package
	// consumergroup); nil when there are none (tests of the classic
	// protocol alone).
	Consumer ConsumerGroups
	// Share is the node's KIP-932 share groups (package sharegroup); nil
	// when there are none.
	Share GroupKind

	// Unstable is the transaction coordinator's offsets not yet committed
	// (OffsetFetch's require_stable); nil when there are none.
	Unstable Unstable
}

// Coordinator is every group this node coordinates. The registry map is
// guarded by mu; each group's state by that group's own lock. Lock order:
// mu before a group's lock, never the reverse.
type Coordinator struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Timers
	own   ownership.Owners

	mu     sync.Mutex
	groups map[groupKey]*group
	closed atomic.Bool
	// rebalances counts the joins completed with members (Stats).
	rebalances atomic.Uint64
	// pending is every member id handed out with MEMBER_ID_REQUIRED, oldest
	// first, bounded node-wide (pending.go); evictWarn spaces the warning
	// of its evictions.
	pending   pendingQueue
	evictWarn ratelog.Every
}

// groupKey files a group under the identity that reached it, because a
// group id is a name two tenants pick independently.
type groupKey struct {
	identity string
	id       string
}

// New builds a coordinator.
func New(cfg Config) *Coordinator {
	if cfg.Clock == nil {
		cfg.Clock = clock.Wall{}
	}
	if cfg.Ownership == nil {
		cfg.Ownership = ownership.Single{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxGroups <= 0 {
		cfg.MaxGroups = DefaultMaxGroups
	}
	if cfg.MaxGroupsPerIdentity <= 0 {
		cfg.MaxGroupsPerIdentity = max(cfg.MaxGroups/4, 1)
	}
	cfg.MaxGroupsPerIdentity = min(cfg.MaxGroupsPerIdentity, cfg.MaxGroups)
	if cfg.MaxGroupSize <= 0 {
		cfg.MaxGroupSize = DefaultMaxGroupSize
	}
	if cfg.MaxPendingMembers <= 0 {
		cfg.MaxPendingMembers = DefaultMaxPendingMembers
	}
	return &Coordinator{
		cfg: cfg, log: cfg.Log, clock: cfg.Clock, own: cfg.Ownership, groups: make(map[groupKey]*group),
		pending:   pendingQueue{max: cfg.MaxPendingMembers},
		evictWarn: ratelog.Every{Window: 10 * time.Second},
	}
}

func (c *Coordinator) kvFor(cl Client) KV {
	if cl.KV != nil {
		return cl.KV
	}
	return c.cfg.KV
}

// validGroupID applies Kafka's rule (an empty id is refused by the
// membership APIs, allowed by the offset and admin ones) and the facade's
// 255-character ceiling.
func validGroupID(id string, emptyOK bool) bool {
	if id == "" {
		return emptyOK
	}
	return utf8.RuneCountInString(id) <= maxGroupIDChars
}

// ownerCode is 0 when this node coordinates group, NOT_COORDINATOR when
// another does (and any state held here for it is dropped), and
// COORDINATOR_NOT_AVAILABLE while ownership cannot be decided.
func (c *Coordinator) ownerCode(cl Client, group string) int16 {
	mine, err := ownership.Mine(c.own, group)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	if !mine {
		if g := c.lookup(cl, group); g != nil {
			c.dropGroup(g)
		}
		return kerr.NotCoordinator.Code
	}
	return 0
}

func (c *Coordinator) lookup(cl Client, group string) *group {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[groupKey{cl.Identity, group}]
}

var errTooManyGroups = errors.New("group ceiling reached")

// getOrCreate returns the group, creating it Empty when absent. Past the
// identity's share of the ceiling one of its own Empty groups without
// members is forgotten to make room (it holds nothing the store does not),
// past the ceiling anybody's; only when none is left does a new group get
// COORDINATOR_NOT_AVAILABLE. So an identity flooding the coordinator with
// groups fills its share and no more (issue 11, item 12).
func (c *Coordinator) getOrCreate(cl Client, id string) (*group, error) {
	k := groupKey{cl.Identity, id}
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.groups[k]; g != nil {
		return g, nil
	}
	if c.heldLocked(k.identity) >= c.cfg.MaxGroupsPerIdentity && !c.evictIdleLocked(func(o groupKey) bool { return o.identity == k.identity }) {
		return nil, errTooManyGroups
	}
	if len(c.groups) >= c.cfg.MaxGroups && !c.evictIdleLocked(func(groupKey) bool { return true }) {
		return nil, errTooManyGroups
	}
	g := newGroup(c, k)
	c.groups[k] = g
	for other := range c.groups {
		if other.id == id && other.identity != k.identity {
			// Where identities fall back to hashed credentials (a broker
			// with JWT_ENABLED), two credentials of one tenant make two
			// groups writing the same offset keys; the operator must hear.
			c.log.Warn("consumer group id is live under a second credential: these are two separate groups sharing committed offsets; give one consumer group one credential", "group", id)
			break
		}
	}
	return g, nil
}

// heldLocked is how many groups identity holds; the caller holds mu.
func (c *Coordinator) heldLocked(identity string) int {
	n := 0
	for k := range c.groups {
		if k.identity == identity {
			n++
		}
	}
	return n
}

// evictIdleLocked forgets one idle group whose key which accepts; the
// caller holds mu.
func (c *Coordinator) evictIdleLocked(which func(groupKey) bool) bool {
	for k, g := range c.groups {
		if !which(k) || !g.wmu.TryLock() {
			continue
		}
		g.mu.Lock()
		idle := g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0
		if idle {
			g.state = stateDead
			delete(c.groups, k)
		}
		g.mu.Unlock()
		g.wmu.Unlock()
		if idle {
			return true
		}
	}
	return false
}

// forget removes g from the registry if it is still the entry for its key.
func (c *Coordinator) forget(g *group) {
	c.mu.Lock()
	if c.groups[g.key] == g {
		delete(c.groups, g.key)
	}
	c.mu.Unlock()
}

// dropGroup ends this node's coordination of g: waiting members are told
// NOT_COORDINATOR (they re-run FindCoordinator), timers stop, and the group
// is forgotten. Its next owner starts it empty and the members rejoin.
func (c *Coordinator) dropGroup(g *group) {
	g.mu.Lock()
	g.kill(kerr.NotCoordinator.Code)
	g.mu.Unlock()
	c.forget(g)
}

// DropUnowned drops every group this node no longer coordinates. Cluster
// mode calls it whenever the live node set changes. While ownership is
// unknown nothing is dropped: an unreachable registry is not a handover.
func (c *Coordinator) DropUnowned() {
	self := c.own.Self().NodeID
	c.mu.Lock()
	var lost []*group
	for k, g := range c.groups {
		owner, err := c.own.Owner(k.id)
		if err == nil && owner.NodeID != self {
			lost = append(lost, g)
		}
	}
	c.mu.Unlock()
	for _, g := range lost {
		c.dropGroup(g)
	}
}

// Close is the coordinator's part of a node's stop: every JoinGroup and
// SyncGroup parked here is answered NOT_COORDINATOR now, and later ones are
// refused the same way without parking, so that a stop never waits a
// rebalance timeout for a join to complete and members go looking for
// their next coordinator at once. Heartbeats, commits and reads keep
// working until the process ends, so a consumer's last commit still lands.
func (c *Coordinator) Close() {
	c.closed.Store(true)
	c.mu.Lock()
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.mu.Lock()
		for _, m := range g.members {
			m.refuseJoin(kerr.NotCoordinator.Code)
			m.refuseSync(kerr.NotCoordinator.Code)
		}
		g.mu.Unlock()
	}
}

// Stats is what the coordinator holds, for /metrics: every state's
// groups and their members, and the rebalances completed so far.
type Stats struct {
	States     []StateCount // one per state, Empty first
	Rebalances uint64
}

// StateCount is how many groups are in State, and their members.
type StateCount struct {
	State   string
	Groups  int
	Members int
}

// Stats reads every group's state, each under its own lock, held briefly
// (no group lock is ever held across a call to Queen).
func (c *Coordinator) Stats() Stats {
	var groups, members [stateDead + 1]int
	c.mu.Lock()
	for _, g := range c.groups {
		g.mu.Lock()
		groups[g.state]++
		members[g.state] += len(g.members)
		g.mu.Unlock()
	}
	c.mu.Unlock()
	st := Stats{Rebalances: c.rebalances.Load()}
	for s := stateEmpty; s <= stateDead; s++ {
		st.States = append(st.States, StateCount{State: s.String(), Groups: groups[s], Members: members[s]})
	}
	return st
}

// Ceiling is the most groups held in memory, and one identity's share.
func (c *Coordinator) Ceiling() (groups, perIdentity int) {
	return c.cfg.MaxGroups, c.cfg.MaxGroupsPerIdentity
}

// Groups is how many groups are held in memory.
func (c *Coordinator) Groups() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.groups)
}

// newMemberID is Kafka's form, client id then a random UUID-sized suffix.
func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return clientID + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
