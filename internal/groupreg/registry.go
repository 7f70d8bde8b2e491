package groupreg

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/ownership"
)

// maxAbsent bounds the cache of group ids known to have no rows.
const maxAbsent = 100_000

// Key is a group: the identity that files it (two tenants' "orders" are
// two groups) and its id.
type Key struct{ Identity, ID string }

// Group is what the registry holds: a group with its own lock; Dead, read
// under it, reports whether the group's life has ended, and Kill, called
// under it, ends it (the registry let it go, or a write failed).
type Group interface {
	comparable
	sync.Locker
	Dead() bool
	Kill()
}

// Registry is the groups held in memory. Its lock is taken before a
// group's, never the reverse.
type Registry[G Group] struct {
	own ownership.Owners

	mu     sync.Mutex
	groups map[Key]G
	// absent is every group id the store was read for and had no rows:
	// only this node writes a group's rows while it owns it. Cleared when
	// owners move.
	absent map[Key]bool
	// loading is the groups being read from the store now, each closed
	// when its load ends.
	loading map[Key]chan struct{}
}

// New is an empty registry whose groups own decides.
func New[G Group](own ownership.Owners) *Registry[G] {
	return &Registry[G]{own: own, groups: map[Key]G{}, absent: map[Key]bool{}, loading: map[Key]chan struct{}{}}
}

// OwnerCode is 0 when this node coordinates id, NOT_COORDINATOR when
// another does (the group held here is dropped), COORDINATOR_NOT_AVAILABLE
// while ownership cannot be decided.
func (r *Registry[G]) OwnerCode(identity, id string) int16 {
	mine, err := ownership.Mine(r.own, id)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code
	}
	if !mine {
		r.Drop(Key{identity, id})
		return kerr.NotCoordinator.Code
	}
	return 0
}

// Owned reports whether this node coordinates id (false while unknown).
func (r *Registry[G]) Owned(id string) bool {
	mine, err := ownership.Mine(r.own, id)
	return err == nil && mine
}

// Drop lets the group of k go, killing it.
func (r *Registry[G]) Drop(k Key) {
	r.mu.Lock()
	g, ok := r.groups[k]
	delete(r.groups, k)
	r.mu.Unlock()
	if ok {
		g.Lock()
		g.Kill()
		g.Unlock()
	}
}

// Forget removes g if it is still the entry for k (the caller killed it).
func (r *Registry[G]) Forget(k Key, g G) {
	r.mu.Lock()
	if r.groups[k] == g {
		delete(r.groups, k)
	}
	r.mu.Unlock()
}

// DropUnowned drops every group this node no longer coordinates and
// forgets which ids have no rows; cluster mode calls it when the live node
// set changes. While ownership is unknown nothing is dropped.
func (r *Registry[G]) DropUnowned() {
	self := r.own.Self().NodeID
	r.mu.Lock()
	clear(r.absent)
	var lost []Key
	for k := range r.groups {
		if o, err := r.own.Owner(k.ID); err == nil && o.NodeID != self {
			lost = append(lost, k)
		}
	}
	r.mu.Unlock()
	for _, k := range lost {
		r.Drop(k)
	}
}

// Lookup returns the group held in memory, or loads it with load (a new
// owner, or a group dropped after a failed write), one load of a group at
// a time: a second one's takeover write would fence the first's group. The
// zero G and 0 when the store has none either.
func (r *Registry[G]) Lookup(ctx context.Context, k Key, load func(context.Context) (G, int16)) (G, int16) {
	var zero G
	for {
		r.mu.Lock()
		if g, ok := r.groups[k]; ok {
			r.mu.Unlock()
			return g, 0
		}
		if r.absent[k] {
			r.mu.Unlock()
			return zero, 0
		}
		if wait := r.loading[k]; wait != nil {
			r.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return zero, kerr.CoordinatorNotAvailable.Code
			}
		}
		done := make(chan struct{})
		r.loading[k] = done
		r.mu.Unlock()
		g, code := load(ctx)
		r.mu.Lock()
		delete(r.loading, k)
		close(done)
		switch {
		case code != 0:
		case g == zero:
			if len(r.absent) >= maxAbsent {
				clear(r.absent) // a cache: forgetting costs one read a group
			}
			r.absent[k] = true
		default:
			r.groups[k] = g
		}
		r.mu.Unlock()
		return g, code
	}
}

// Create returns the group of k, making it with make when none is held
// (after any load of it ends); make is told how many groups are held, and
// how many of them are k's identity's, and may refuse (the zero G).
func (r *Registry[G]) Create(k Key, make func(total, identity int) G) G {
	r.mu.Lock()
	for r.loading[k] != nil {
		wait := r.loading[k]
		r.mu.Unlock()
		<-wait
		r.mu.Lock()
	}
	defer r.mu.Unlock()
	if g, ok := r.groups[k]; ok {
		return g
	}
	held := 0
	for o := range r.groups {
		if o.Identity == k.Identity {
			held++
		}
	}
	var zero G
	g := make(len(r.groups), held)
	if g == zero {
		return zero
	}
	delete(r.absent, k)
	r.groups[k] = g
	return g
}

// All is every group held, for a read of each under its own lock.
func (r *Registry[G]) All() []G {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]G, 0, len(r.groups))
	for _, g := range r.groups {
		out = append(out, g)
	}
	return out
}

// Keys is every group key held.
func (r *Registry[G]) Keys() []Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Key, 0, len(r.groups))
	for k := range r.groups {
		out = append(out, k)
	}
	return out
}

// Held is the group of k held in memory, if any (no load).
func (r *Registry[G]) Held(k Key) (G, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.groups[k]
	return g, ok
}
