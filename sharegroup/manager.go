package sharegroup

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/ownership"
)

const (
	// topicRefresh is how often a group lists the catalogue again at a
	// heartbeat, to see subscribed topics appear, grow or go.
	topicRefresh = time.Second
	// writeTimeout bounds a write a timer makes (no request carries it).
	writeTimeout    = 10 * time.Second
	maxOpsPerCall   = 256
	maxGroupIDChars = 255
	// maxAbsent bounds the cache of group ids known to have no rows, and
	// maxCached the cache of Member's positive answers.
	maxAbsent = 100_000
	maxCached = 100_000
	// memberCacheTTL is how long Member trusts a positive answer.
	memberCacheTTL = time.Second
)

type groupKey struct{ identity, id string }

// Manager is every share group this node coordinates. Lock order: mu
// before a group's lock, never the reverse; cmu is taken alone.
type Manager struct {
	cfg   Config
	log   *slog.Logger
	clock clock.Timers
	own   ownership.Owners

	mu     sync.Mutex
	groups map[groupKey]*group
	// absent is every group id the store was read for and had no rows
	// (only this node writes a group's rows while it owns it); cleared
	// when owners move.
	absent  map[groupKey]bool
	loading map[groupKey]chan struct{}

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
	return &Manager{cfg: cfg, log: cfg.Log, clock: cfg.Clock, own: cfg.Ownership,
		groups: map[groupKey]*group{}, absent: map[groupKey]bool{}, loading: map[groupKey]chan struct{}{},
		cached: map[memberKey]cachedMember{}}
}

// ownerCode is 0 when this node coordinates id, NOT_COORDINATOR when
// another does (state held here is dropped), COORDINATOR_NOT_AVAILABLE
// while ownership cannot be decided.
func (m *Manager) ownerCode(identity, id string) int16 {
	mine, err := ownership.Mine(m.own, id)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	if !mine {
		m.drop(groupKey{identity, id})
		return kerr.NotCoordinator.Code
	}
	return 0
}

func (m *Manager) owned(id string) bool {
	mine, err := ownership.Mine(m.own, id)
	return err == nil && mine
}

func (m *Manager) drop(k groupKey) {
	m.mu.Lock()
	g := m.groups[k]
	delete(m.groups, k)
	m.mu.Unlock()
	if g != nil {
		g.mu.Lock()
		g.kill()
		g.mu.Unlock()
	}
}

// forget removes g from the registry if it is still the entry for its key.
func (m *Manager) forget(g *group) {
	m.mu.Lock()
	if m.groups[g.key] == g {
		delete(m.groups, g.key)
	}
	m.mu.Unlock()
}

// DropUnowned drops every group this node no longer coordinates; cluster
// mode calls it when the live node set changes. While ownership is
// unknown nothing is dropped.
func (m *Manager) DropUnowned() {
	self := m.own.Self().NodeID
	m.mu.Lock()
	clear(m.absent)
	var lost []groupKey
	for k := range m.groups {
		if o, err := m.own.Owner(k.id); err == nil && o.NodeID != self {
			lost = append(lost, k)
		}
	}
	m.mu.Unlock()
	for _, k := range lost {
		m.drop(k)
	}
}

// lookup returns the group held in memory, or loads it from the store (a
// new owner, or a group dropped after a failed write); nil and 0 when the
// store has none either.
func (m *Manager) lookup(ctx context.Context, identity string, kv KV, id string) (*group, int16) {
	k := groupKey{identity, id}
	for {
		m.mu.Lock()
		if g := m.groups[k]; g != nil {
			m.mu.Unlock()
			return g, 0
		}
		if m.absent[k] {
			m.mu.Unlock()
			return nil, 0
		}
		if wait := m.loading[k]; wait != nil {
			// One load of a group at a time: a second one's takeover
			// write would fence the first's group object.
			m.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, kerr.CoordinatorNotAvailable.Code
			}
		}
		done := make(chan struct{})
		m.loading[k] = done
		m.mu.Unlock()
		g, code := m.load(ctx, k, kv)
		m.mu.Lock()
		delete(m.loading, k)
		close(done)
		switch {
		case code != 0:
		case g == nil:
			if len(m.absent) >= maxAbsent {
				clear(m.absent) // a cache: forgetting costs one read a group
			}
			m.absent[k] = true
		default:
			m.groups[k] = g
		}
		m.mu.Unlock()
		return g, code
	}
}

// create makes an empty group in memory (its rows are written with its
// first member).
func (m *Manager) create(identity string, kv KV, id string) *group {
	k := groupKey{identity, id}
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[k]; g != nil {
		return g
	}
	delete(m.absent, k)
	g := newGroup(m, k, kv)
	g.metaVer = -1 // no rows yet: the first write expects none
	m.groups[k] = g
	return g
}

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
