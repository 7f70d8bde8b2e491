package groupreg

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Acquire is the group of k, loaded with load if need be (Lookup), locked
// and alive: the zero G and 0 when the store has none either, the zero G
// and COORDINATOR_NOT_AVAILABLE when it was let go before its lock was
// taken. The caller unlocks.
func Acquire[G Group](ctx context.Context, r *Registry[G], k Key, load func(context.Context) (G, int16)) (G, int16) {
	var zero G
	g, code := r.Lookup(ctx, k, load)
	if code != 0 || g == zero {
		return zero, code
	}
	g.Lock()
	if g.Dead() {
		g.Unlock()
		return zero, kerr.CoordinatorNotAvailable.Code
	}
	return g, 0
}

// Retry is the group get answers, locked and alive, get asked again once
// when the group it answered was let go before its lock was taken (a new
// owner's load, or a failed write, meanwhile): a heartbeat's way to its
// group, which it may create. COORDINATOR_NOT_AVAILABLE the second time;
// get's refusal, or the zero G, as get answers them. The caller unlocks.
func Retry[G Group](get func() (G, *Refusal)) (G, *Refusal) {
	var zero G
	for attempt := 0; ; attempt++ {
		g, e := get()
		if e != nil || g == zero {
			return zero, e
		}
		g.Lock()
		if !g.Dead() {
			return g, nil
		}
		g.Unlock()
		if attempt > 0 {
			return zero, &Refusal{Code: kerr.CoordinatorNotAvailable.Code}
		}
	}
}

// Holds reports whether k's group is coordinated here and held (loaded if
// need be), and whether it has members (members, read under its lock);
// code is the refusal when that cannot be known. An id another node
// coordinates is not held, with no code: the caller answers ownership.
func Holds[G Group](ctx context.Context, r *Registry[G], k Key, load func(context.Context) (G, int16), members func(G) int) (held, hasMembers bool, code int16) {
	var zero G
	if !r.Owned(k.ID) {
		return false, false, 0
	}
	g, code := Acquire(ctx, r, k, load)
	if g == zero {
		return false, false, code
	}
	defer g.Unlock()
	return true, members(g) > 0, 0
}

// DeleteEmpty deletes k's group when it has no members (NON_EMPTY_GROUP
// otherwise): del removes what the group has in the store, under its lock,
// then the group's life ends and the registry forgets it. False and 0
// when there is no group.
func DeleteEmpty[G Group](ctx context.Context, r *Registry[G], k Key, load func(context.Context) (G, int16), members func(G) int, del func(G) int16) (deleted bool, code int16) {
	var zero G
	g, code := Acquire(ctx, r, k, load)
	if g == zero {
		return false, code
	}
	defer g.Unlock()
	if members(g) > 0 {
		return false, kerr.NonEmptyGroup.Code
	}
	if code := del(g); code != 0 {
		return false, code
	}
	g.Kill()
	r.Forget(k, g)
	return true, 0
}
