package groupreg

import (
	"context"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/ownership"
)

type liveGroup struct {
	mu   sync.Mutex
	dead bool
}

func (g *liveGroup) Lock()      { g.mu.Lock() }
func (g *liveGroup) Unlock()    { g.mu.Unlock() }
func (g *liveGroup) Dead() bool { return g.dead }
func (g *liveGroup) Kill()      { g.dead = true }

// TestRetryAsksAgainOnce: a group let go before its lock was taken is
// asked for again once; twice is COORDINATOR_NOT_AVAILABLE, and what is
// answered alive comes back locked.
func TestRetryAsksAgainOnce(t *testing.T) {
	for deadFirst := range 3 {
		calls := 0
		g, e := Retry(func() (*liveGroup, *Refusal) {
			calls++
			return &liveGroup{dead: calls <= deadFirst}, nil
		})
		switch deadFirst {
		case 2:
			if g != nil || e == nil || e.Code != kerr.CoordinatorNotAvailable.Code || calls != 2 {
				t.Fatalf("dead twice: %v %v after %d asks", g, e, calls)
			}
		default:
			if e != nil || g == nil || g.mu.TryLock() || calls != deadFirst+1 {
				t.Fatalf("dead %d times: %v %v after %d asks", deadFirst, g, e, calls)
			}
			g.Unlock()
		}
	}
	refused := &Refusal{Code: kerr.GroupIDNotFound.Code}
	if g, e := Retry(func() (*liveGroup, *Refusal) { return nil, refused }); g != nil || e != refused {
		t.Fatalf("a refusal: %v %v", g, e)
	}
}

// TestAcquire: a held group comes back locked; one let go since is
// COORDINATOR_NOT_AVAILABLE, not asked for again; none is nil and 0.
func TestAcquire(t *testing.T) {
	r := New[*liveGroup](ownership.Single{})
	ctx := context.Background()
	k := Key{ID: "g"}
	none := func(context.Context) (*liveGroup, int16) { return nil, 0 }
	if g, code := Acquire(ctx, r, k, none); g != nil || code != 0 {
		t.Fatalf("no group: %v %d", g, code)
	}
	held := r.Create(Key{ID: "h"}, func(int, int) *liveGroup { return &liveGroup{} })
	g, code := Acquire(ctx, r, Key{ID: "h"}, none)
	if g != held || code != 0 || g.mu.TryLock() {
		t.Fatalf("held: %v %d", g, code)
	}
	g.dead = true
	g.Unlock()
	if g, code := Acquire(ctx, r, Key{ID: "h"}, none); g != nil || code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("let go: %v %d", g, code)
	}
}
