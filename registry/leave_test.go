package registry

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/clock"
)

// wallCfg is h.cfg on the wall clock at a fast heartbeat: Leave's wait is
// measured against peers that really heartbeat.
func wallCfg(h *harness, id int32) Config {
	c := h.cfg(id, fmt.Sprintf("inc-%d", id))
	c.Clock, c.Heartbeat, c.TTL = clock.Wall{}, 200*time.Millisecond, time.Second
	return c
}

func waitLive(t *testing.T, want string, ss ...*Session) {
	t.Helper()
	for _, s := range ss {
		waitFor(t, fmt.Sprintf("node %d sees %s", s.ID(), want), func() bool { return fmt.Sprint(ids(s.Live())) == want })
	}
}

// Leave returns only once every peer has read the live set without the
// leaving node: at its return no peer names it.
func TestLeaveReturnsOnceEveryPeerHasRead(t *testing.T) {
	h := newHarness(t)
	a, b, c := h.start(h.store, wallCfg(h, 1)), h.start(h.store, wallCfg(h, 2)), h.start(h.store, wallCfg(h, 3))
	waitLive(t, "[1 2 3]", a, b, c)
	start := time.Now()
	if err := a.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for _, s := range []*Session{b, c} {
		if got := fmt.Sprint(ids(s.Live())); got != "[2 3]" {
			t.Fatalf("node %d sees %s when Leave returned after %v", s.ID(), got, took)
		}
	}
	if v, _ := h.row(a.Key()); v != 0 {
		t.Fatal("row still present after Leave")
	}
	if took > 2*time.Second {
		t.Errorf("Leave took %v at a 200 ms heartbeat", took)
	}
}

// A peer that never heartbeats again (down, its row not yet expired) does
// not hold Leave past one heartbeat and a half, and ctx cuts it sooner.
func TestLeaveDoesNotWaitForADownPeer(t *testing.T) {
	h := newHarness(t)
	a, b := h.start(h.store, wallCfg(h, 1)), h.start(h.store, wallCfg(h, 2))
	waitLive(t, "[1 2]", a, b)
	b.stop()
	<-b.loopDone
	start := time.Now()
	if err := a.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("Leave with a silent peer took %v, want its bound of 300 ms", took)
	}

	h2 := newHarness(t)
	c, d := h2.start(h2.store, wallCfg(h2, 1)), h2.start(h2.store, wallCfg(h2, 2))
	waitLive(t, "[1 2]", c, d)
	d.stop()
	<-d.loopDone
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	start = time.Now()
	if err := c.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("Leave past its context: %v", took)
	}
}
