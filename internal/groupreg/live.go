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
