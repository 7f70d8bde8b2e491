package node

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// serveForShutdown serves n on its own listener and returns the address
// and the channel Serve's result arrives on; the test calls Shutdown.
func serveForShutdown(t *testing.T, n *Node) (string, <-chan error) {
	t.Helper()
	addr, err := n.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(context.Background()) }()
	return addr.String(), served
}

// shutdownWithin runs n's Shutdown on a context of limit and returns its
// error, having checked that the release steps ran, that k's connection
// was closed and that Serve ended cleanly.
func shutdownWithin(t *testing.T, n *Node, k *kclient, served <-chan error, limit time.Duration) error {
	t.Helper()
	var released atomic.Bool
	n.OnRelease(func(context.Context) error { released.Store(true); return nil })
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	err := n.Shutdown(ctx)
	if !released.Load() {
		t.Fatal("the release steps did not run")
	}
	k.expectClosed()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	return err
}

// A Fetch parked in Queen's long poll (30 s max wait, nothing to read) when
// Shutdown begins is cut at once: its connection closes, the drain ends by
// itself inside the shutdown's context (Shutdown reports no cut), and the
// release steps run after it.
func TestShutdownCutsAParkedFetch(t *testing.T) {
	n, dq := newTestNode(t, nil)
	dq.addQueue("parked", 1) // offset 0 exists; offset 1 is the next
	addr, served := serveForShutdown(t, n)
	k := dial(t, addr)
	k.send(fetchReq(6, 30000, 1, 1<<20, fetchPart{"parked", 0, 1, 1 << 20}))
	testsupport.WaitFor(t, 10*time.Second, "the fetch at Queen", func() bool { return dq.count("POST /api/v1/fetch") == 1 })

	if err := shutdownWithin(t, n, k, served, 20*time.Second); err != nil {
		t.Fatalf("shutdown with a parked fetch: %v (the drain waited for the long poll)", err)
	}
}

// A request still being handled when the shutdown's time is up (a push
// that Queen holds) is cancelled, so that its connection closes and the
// release steps run at once rather than after the call's own 10 s budget.
func TestShutdownCancelsRequestsAtItsDeadline(t *testing.T) {
	n, dq := newTestNode(t, nil)
	dq.addQueue("slow", 1)
	dq.setFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path == "/api/v1/push" {
			<-r.Context().Done() // held until the facade gives up on it
		}
		return 0, "", ""
	})
	addr, served := serveForShutdown(t, n)
	k := dial(t, addr)
	k.send(produceReq(9, -1, "slow", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)))
	testsupport.WaitFor(t, 10*time.Second, "the push at Queen", func() bool { return dq.count("POST /api/v1/push") == 2 })

	err := shutdownWithin(t, n, k, served, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "drain cut short") || strings.Contains(err.Error(), "left behind") {
		t.Fatalf("shutdown with a held push: %v, want the drain cut short and its handler cancelled", err)
	}
}

// A drain cut short leaves the release steps their budget inside the
// shutdown's time: with a push held at Queen for good, the release step
// gets a live context at least releaseBudget long and the whole stop ends
// within its context, as the process's 4 s stop must inside the embedded
// supervisor's 5 s grace before SIGKILL.
func TestShutdownKeepsTheReleaseBudget(t *testing.T) {
	n, dq := newTestNode(t, nil)
	dq.addQueue("slow", 1)
	dq.setFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path == "/api/v1/push" {
			<-r.Context().Done()
		}
		return 0, "", ""
	})
	addr, served := serveForShutdown(t, n)
	k := dial(t, addr)
	k.send(produceReq(9, -1, "slow", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)))
	testsupport.WaitFor(t, 10*time.Second, "the push at Queen", func() bool { return dq.count("POST /api/v1/push") == 2 })

	var left time.Duration
	var live bool
	n.OnRelease(func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		left, live = time.Until(dl), ok && ctx.Err() == nil
		return nil
	})
	const limit = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	err := n.Shutdown(ctx)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "drain cut short") {
		t.Fatalf("shutdown with a held push: %v, want the drain cut short", err)
	}
	if !live || left < releaseBudget*9/10 {
		t.Fatalf("the release step got %v left (live %v), want a live context of about %v", left, live, releaseBudget)
	}
	if took > limit+releaseBudget/2 {
		t.Fatalf("the stop took %v, past its %v", took, limit)
	}
	k.expectClosed()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
