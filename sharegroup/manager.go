package sharegroup

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/internal/groupreg"
	"github.com/queen-mq/queen-kafka/ownership"
)

const (
	// topicRefresh is how often a group lists the catalogue again at a
	// heartbeat, to see subscribed topics appear, grow or go.
	topicRefresh = time.Second
	// writeTimeout bounds a write a timer makes (no request carries it).
	writeTimeout    = 10 * time.Second
	maxGroupIDChars = 255
	// maxCached bounds the cache of Member's positive answers.
	maxCached = 100_000
	// memberCacheTTL is how long Member trusts a positive answer.
	memberCacheTTL = time.Second
)

type groupKey = groupreg.Key

// Manager is every share group this node coordinates. Lock order: the
// registry's before a group's lock, never the reverse; cmu is taken alone.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Timers
	reg   *groupreg.Registry[*group]
	owner groupreg.Owner

	cmu    sync.Mutex
	cached map[memberKey]cachedMember
}

// memberKey is one Member answer's cache key; the entry is used only by a
// caller with the same KV (credential) that proved it.
type memberKey struct{ group, member string }

type cachedMember struct {
	kv    KV
	until time.Time
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
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	return &Manager{cfg: cfg, log: cfg.Log, clock: cfg.Clock, reg: groupreg.New[*group](cfg.Ownership), cached: map[memberKey]cachedMember{},
		owner: groupreg.Owner{Fenced: cfg.Fenced, NodeID: cfg.NodeID, Incarnation: cfg.Incarnation}}
}

// lookup returns the group held in memory, or loads it from the store (a
// new owner, or a group dropped after a failed write); nil and 0 when the
// store has none either.
func (m *Manager) lookup(ctx context.Context, identity string, kv KV, id string) (*group, int16) {
	k := groupKey{Identity: identity, ID: id}
	return m.reg.Lookup(ctx, k, m.loader(k, kv))
}

func (m *Manager) loader(k groupKey, kv KV) func(context.Context) (*group, int16) {
	return func(ctx context.Context) (*group, int16) { return m.load(ctx, k, kv) }
}

// memberCount is how many members g has; the caller holds g.mu.
func memberCount(g *group) int { return len(g.members) }

// acquire is lookup's group locked and alive (groupreg.Acquire): nil and
// 0 when the store has none, nil and the code when it cannot be had.
func (m *Manager) acquire(ctx context.Context, identity string, kv KV, id string) (*group, int16) {
	k := groupKey{Identity: identity, ID: id}
	return groupreg.Acquire(ctx, m.reg, k, m.loader(k, kv))
}

// create makes an empty group in memory (its rows are written with its
// first member).
func (m *Manager) create(identity string, kv KV, id string) *group {
	k := groupKey{Identity: identity, ID: id}
	return m.reg.Create(k, func(int, int) *group {
		g := newGroup(m, k, kv)
		g.rows.Ver = -1 // no rows yet: the first write expects none
		return g
	})
}

// DropUnowned drops every group this node no longer coordinates; cluster
// mode calls it when the live node set changes.
func (m *Manager) DropUnowned() { m.reg.DropUnowned() }

// memberGone tells the caller's hook (without locks held) and drops
// Member's cached answers for the members.
func (m *Manager) memberGone(ctx context.Context, kv KV, group string, members []string) {
	m.cmu.Lock()
	for _, id := range members {
		delete(m.cached, memberKey{group, id})
	}
	m.cmu.Unlock()
	if m.cfg.OnMemberGone == nil {
		return
	}
	for _, id := range members {
		m.cfg.OnMemberGone(ctx, kv, group, id)
	}
}

func (m *Manager) cacheHit(kv KV, group, member string) bool {
	m.cmu.Lock()
	defer m.cmu.Unlock()
	e, ok := m.cached[memberKey{group, member}]
	return ok && comparable(kv) && e.kv == kv && m.clock.Now().Before(e.until)
}

func (m *Manager) cacheAdd(kv KV, group, member string) {
	if !comparable(kv) {
		return
	}
	m.cmu.Lock()
	defer m.cmu.Unlock()
	if len(m.cached) >= maxCached {
		clear(m.cached)
	}
	m.cached[memberKey{group, member}] = cachedMember{kv: kv, until: m.clock.Now().Add(memberCacheTTL)}
}

// comparable reports whether kv may be compared with == (a KV of an
// uncomparable dynamic type is never cached rather than panicking).
func comparable(kv KV) bool {
	return kv != nil && reflect.TypeOf(kv).Comparable()
}

// settings are the group's heartbeat interval and session timeout: its
// own config where set, the broker's otherwise.
func (m *Manager) settings(ctx context.Context, kv KV, group string) (hb, session time.Duration) {
	hb, session = m.cfg.HeartbeatInterval, m.cfg.SessionTimeout
	if m.cfg.GroupConfig == nil {
		return hb, session
	}
	s, err := m.cfg.GroupConfig(ctx, kv, group)
	if err != nil {
		m.log.Warn("share group config unreadable; using the broker's settings", "group", group, "err", err)
		return hb, session
	}
	if s.HeartbeatInterval > 0 {
		hb = s.HeartbeatInterval
	}
	if s.SessionTimeout > 0 {
		session = s.SessionTimeout
	}
	return hb, session
}
