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

// TestHoldsAndDeleteEmpty: a held group reports its members; a group with
// members is NON_EMPTY_GROUP to DeleteEmpty and stays; an empty one is
// deleted through del, killed and forgotten; a failed del keeps it.
func TestHoldsAndDeleteEmpty(t *testing.T) {
	r := New[*liveGroup](ownership.Single{})
	ctx := context.Background()
	k := Key{ID: "g"}
	none := func(context.Context) (*liveGroup, int16) { return nil, 0 }
	n := 2
	count := func(*liveGroup) int { return n }
	if held, _, code := Holds(ctx, r, k, none, count); held || code != 0 {
		t.Fatalf("no group held: %v %d", held, code)
	}
	g := r.Create(k, func(int, int) *liveGroup { return &liveGroup{} })
	if held, has, code := Holds(ctx, r, k, none, count); !held || !has || code != 0 {
		t.Fatalf("held: %v %v %d", held, has, code)
	}
	dels := 0
	del := func(*liveGroup) int16 { dels++; return 0 }
	if ok, code := DeleteEmpty(ctx, r, k, none, count, del); ok || code != kerr.NonEmptyGroup.Code || dels != 0 {
		t.Fatalf("with members: %v %d", ok, code)
	}
	n = 0
	failing := func(*liveGroup) int16 { return kerr.CoordinatorNotAvailable.Code }
	if ok, code := DeleteEmpty(ctx, r, k, none, count, failing); ok || code != kerr.CoordinatorNotAvailable.Code || g.dead {
		t.Fatalf("failed delete: %v %d dead %v", ok, code, g.dead)
	}
	if ok, code := DeleteEmpty(ctx, r, k, none, count, del); !ok || code != 0 || dels != 1 || !g.dead {
		t.Fatalf("empty: %v %d, %d deletes, dead %v", ok, code, dels, g.dead)
	}
	if _, held := r.Held(k); held {
		t.Fatal("a deleted group still held")
	}
}
