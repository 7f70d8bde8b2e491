package registry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/hashring"
	"github.com/queen-mq/queen-kafka/queen"
)

func ids(nodes []Node) []int32 {
	out := make([]int32, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// startFaulty starts node 1 behind a faultKV, which answers normally until
// its mode is switched.
func startFaulty(t *testing.T) (*harness, *faultKV, *Session) {
	h := newHarness(t)
	f := newFaultKV(h.store)
	return h, f, h.start(f, h.cfg(1, "a"))
}

func TestHeartbeatIsOneCallThatWritesAndReadsTheLiveSet(t *testing.T) {
	h := newHarness(t)
	rec := &recKV{next: h.store}
	a := h.start(rec, h.cfg(1, "inc-a"))
	b := h.start(h.store, h.cfg(2, "inc-b"))
	boot := rec.take()
	if len(boot) != 1 {
		t.Fatalf("boot claim of a free id took %d calls", len(boot))
	}
	if got := ids(a.Live()); fmt.Sprint(got) != "[1]" {
		t.Fatalf("node 1 right after boot sees %v", got)
	}

	held := a.HeldVersion()
	changed := a.Changed()
	h.tick(2)
	select {
	case <-changed:
	default:
		t.Error("Changed not signalled when node 2 appeared")
	}
	unchanged := a.Changed()
	calls := rec.take()
	if len(calls) != 1 {
		t.Fatalf("one heartbeat made %d calls", len(calls))
	}
	ops := calls[0]
	if len(ops) != 2 {
		t.Fatalf("heartbeat call has %d ops", len(ops))
	}
	put, list := ops[0], ops[1]
	if put.Op != queen.OpPut || put.NS != queen.Namespace || put.Key != "qk:node:queen:1" ||
		put.Expect == nil || *put.Expect != held || put.TTLSeconds != 10 || put.Forever || put.Required {
		t.Errorf("heartbeat put %+v (held %d)", put, held)
	}
	if list.Op != queen.OpGetPrefix || list.Prefix != "qk:node:queen:" || list.Limit != 64 {
		t.Errorf("heartbeat read %+v", list)
	}
	if got := ids(a.Live()); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("node 1 after a heartbeat sees %v", got)
	}
	if a.HeldVersion() == held {
		t.Error("held version did not move with the heartbeat")
	}

	// The row carries §10's fields.
	v, n := h.row("qk:node:queen:1")
	if v != a.HeldVersion() {
		t.Errorf("store version %d, held %d", v, a.HeldVersion())
	}
	want := Node{ID: 1, Host: "node1.test", Port: 9092, Incarnation: "inc-a", Since: h.clk.Now().Add(-testHB).UnixMilli(), Version: "test"}
	if n != want {
		t.Errorf("row %+v, want %+v", n, want)
	}
	if b.Err() != nil || a.Err() != nil {
		t.Fatalf("unhealthy: %v / %v", a.Err(), b.Err())
	}
	h.tick(2)
	select {
	case <-unchanged:
		t.Error("Changed signalled by a heartbeat that changed nothing")
	default:
	}
}

func TestOwnerAgreesOnEveryNode(t *testing.T) {
	h := newHarness(t)
	var ss []*Session
	for id := int32(1); id <= 3; id++ {
		ss = append(ss, h.start(h.store, h.cfg(id, fmt.Sprintf("inc-%d", id))))
	}
	h.tick(3)
	ring := hashring.New([]int32{1, 2, 3})
	for g := range 500 {
		group := fmt.Sprintf("group-%d", g)
		want, _ := ring.Owner(group)
		for _, s := range ss {
			n, err := s.Owner(group)
			if err != nil || n.ID != want {
				t.Fatalf("node %d: owner of %s = %d (%v), want %d", s.ID(), group, n.ID, err, want)
			}
			if n.Addr() != fmt.Sprintf("node%d.test:9092", want) {
				t.Fatalf("owner address %q", n.Addr())
			}
		}
	}
	v := ss[0].View()
	if c, _ := v.Ring.Controller(); c != 1 || v.Self != 1 {
		t.Errorf("controller %d self %d", c, v.Self)
	}
}

func TestBootAdoptsAnExpiredRow(t *testing.T) {
	h := newHarness(t)
	h.write("qk:node:queen:1", other(1, "dead"), 10)
	h.clk.Advance(11 * time.Second)
	rec := &recKV{next: h.store}
	s := h.start(rec, h.cfg(1, "new"))
	if n := len(rec.take()); n != 1 {
		t.Errorf("claiming an expired row took %d calls, want 1 (no watch)", n)
	}
	if _, n := h.row(s.Key()); n.Incarnation != "new" {
		t.Fatalf("row after claim belongs to %q", n.Incarnation)
	}
}

// startAsync runs Start in the background and returns its outcome channel.
func startAsync(ctx context.Context, kv KV, cfg Config) <-chan startResult {
	ch := make(chan startResult, 1)
	go func() {
		s, err := Start(ctx, kv, cfg)
		ch <- startResult{s, err}
	}()
	return ch
}

type startResult struct {
	s   *Session
	err error
}

// driveBoot advances the fake clock by step whenever waiters timers are
// armed, until the boot behind res returns; bounded in real time, so a boot
// that never returns fails the test instead of hanging it.
func (h *harness) driveBoot(res <-chan startResult, waiters int, step time.Duration) startResult {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-res:
			return r
		case <-deadline:
			h.t.Fatalf("boot did not return within 10 s of real time (fake clock at %v)", h.clk.Now())
		case <-time.After(time.Millisecond):
			if h.clk.Waiters() == waiters {
				h.clk.Advance(step)
			}
		}
	}
}

// A predecessor's row that nobody refreshes expires inside the watch and the
// replacement takes it then: a restart on the same ordinal waits, it does
// not fail.
func TestBootWaitsOutAPredecessorsRowUntilItExpires(t *testing.T) {
	h := newHarness(t)
	h.write("qk:node:queen:1", other(1, "predecessor"), 10)
	h.clk.Advance(3 * time.Second) // the predecessor died 3 s after its last write
	res := startAsync(context.Background(), h.store, h.cfg(1, "replacement"))
	for elapsed := time.Duration(0); elapsed < 7*time.Second; elapsed += time.Second {
		waitFor(t, "claim watching", func() bool { return h.clk.Waiters() == 1 })
		select {
		case r := <-res:
			t.Fatalf("boot finished after %v while the predecessor row was live: %v", elapsed, r.err)
		default:
		}
		h.clk.Advance(time.Second)
	}
	// The row expired at +10 s; the watch's next look takes it.
	r := h.driveBoot(res, 1, time.Second)
	if r.err != nil {
		t.Fatalf("boot failed: %v", r.err)
	}
	t.Cleanup(func() { _ = r.s.Close(context.Background()) })
	if _, n := h.row(r.s.Key()); n.Incarnation != "replacement" {
		t.Fatalf("row belongs to %q", n.Incarnation)
	}
	if !contains(h.logs.String(), "watching it before adopting") {
		t.Errorf("no log line about the watch:\n%s", h.logs.String())
	}
}

// A row that outlives the whole watch without moving (written with a longer
// TTL than ours) is a dead predecessor's: adopted with expect = its version.
func TestBootAdoptsAStaticRowAfterTTLPlusHeartbeat(t *testing.T) {
	h := newHarness(t)
	v := h.write("qk:node:queen:1", other(1, "predecessor"), 3600)
	rec := &recKV{next: h.store}
	res := startAsync(context.Background(), rec, h.cfg(1, "replacement"))
	start := h.clk.Now()
	r := h.driveBoot(res, 1, testHB)
	if r.err != nil {
		t.Fatalf("boot failed: %v", r.err)
	}
	t.Cleanup(func() { _ = r.s.Close(context.Background()) })
	if waited := h.clk.Now().Sub(start); waited < testTTL+testHB {
		t.Fatalf("adopted after %v, before one TTL plus one heartbeat", waited)
	}
	calls := rec.take()
	last := calls[len(calls)-1][0]
	if last.Expect == nil || *last.Expect != v {
		t.Fatalf("adopting put expect %v, want the watched version %d", last.Expect, v)
	}
	if _, n := h.row(r.s.Key()); n.Incarnation != "replacement" {
		t.Fatalf("row belongs to %q", n.Incarnation)
	}
}

// A second live process with the same id: the first keeps heartbeating, so
// the second sees the version move and refuses to boot, naming the evidence.
func TestBootFailsWhenAnotherLiveProcessRefreshesTheID(t *testing.T) {
	h := newHarness(t)
	first := h.start(h.store, h.cfg(2, "first"))
	firstVersion := first.HeldVersion()
	res := startAsync(context.Background(), h.store, h.cfg(2, "second"))
	r := h.driveBoot(res, 2, testHB) // first's heartbeat and second's watch
	if r.s != nil {
		t.Fatal("second process with a live id booted")
	}
	var ce *ConflictError
	if !errors.As(r.err, &ce) {
		t.Fatalf("boot error %v is not a ConflictError", r.err)
	}
	if ce.FirstVersion != firstVersion || ce.LastVersion == ce.FirstVersion || ce.Holder.Incarnation != "first" ||
		ce.Holder.Addr() != "node2.test:9092" || ce.Watched <= 0 || ce.Watched > testTTL+testHB {
		t.Fatalf("evidence %+v", ce)
	}
	msg := r.err.Error()
	for _, want := range []string{"node id 2", "qk:node:queen:2", fmt.Sprintf("from version %d", firstVersion), `"first"`, "node2.test:9092", "QUEEN_KAFKA_NODE_ID"} {
		if !contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if first.Err() != nil {
		t.Errorf("the live holder was disturbed: %v", first.Err())
	}
	if _, n := h.row(first.Key()); n.Incarnation != "first" {
		t.Errorf("row now belongs to %q", n.Incarnation)
	}
}

func TestCloseDeletesTheRowFencedOnTheHeldVersion(t *testing.T) {
	h := newHarness(t)
	rec := &recKV{next: h.store}
	a := h.start(rec, h.cfg(1, "a"))
	b := h.start(h.store, h.cfg(2, "b"))
	h.tick(2)
	if fmt.Sprint(ids(b.Live())) != "[1 2]" {
		t.Fatalf("b sees %v", ids(b.Live()))
	}
	held := a.HeldVersion()
	rec.take()
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := rec.take()
	if len(calls) != 1 || len(calls[0]) != 1 || calls[0][0].Op != queen.OpDelete || calls[0][0].Expect == nil || *calls[0][0].Expect != held {
		t.Fatalf("close calls %+v, want one delete expecting %d", calls, held)
	}
	if v, _ := h.row(a.Key()); v != 0 {
		t.Fatal("row still present after Close")
	}
	select {
	case <-a.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if !errors.Is(a.Err(), ErrClosed) {
		t.Errorf("Err after Close = %v", a.Err())
	}
	// The peer drops the node on its next read, not one TTL later.
	h.clk.Advance(testHB)
	waitFor(t, "b drops node 1", func() bool { return fmt.Sprint(ids(b.Live())) == "[2]" })
}

func TestCloseLeavesARowAnotherProcessTook(t *testing.T) {
	h := newHarness(t)
	a := h.start(h.store, h.cfg(1, "a"))
	v := h.write(a.Key(), other(1, "usurper"), 10)
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, n := h.row(a.Key())
	if got != v || n.Incarnation != "usurper" {
		t.Fatalf("row after Close: version %d incarnation %q, want %d usurper", got, n.Incarnation, v)
	}
}

func TestCloseWithinBudgetWhenRegistryHangs(t *testing.T) {
	h, f, a := startFaulty(t)
	f.mode.Store(faultHang)
	start := time.Now()
	err := a.Close(context.Background())
	if err == nil || !contains(err.Error(), "expires instead") {
		t.Fatalf("Close against a hung registry: %v", err)
	}
	if d := time.Since(start); d > CloseBudget+time.Second {
		t.Fatalf("Close took %v, budget %v", d, CloseBudget)
	}
	if v, _ := h.row(a.Key()); v == 0 {
		t.Fatal("row deleted though the registry hung")
	}
}

func TestUnreachableRegistryIsUnhealthyThenRecovers(t *testing.T) {
	h, f, a := startFaulty(t)
	h.tick(1)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	changed := a.Changed()
	f.mode.Store(faultFail)
	h.tick(1)
	err := a.Err()
	if !errors.Is(err, ErrUnavailable) || queen.KindOf(err) != queen.KindTransport {
		t.Fatalf("Err with registry down = %v", err)
	}
	if _, err := a.Owner("g"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Owner with registry down = %v", err)
	}
	select {
	case <-changed:
	default:
		t.Error("Changed not signalled on the outage")
	}
	if !contains(h.logs.String(), "group RPCs answer COORDINATOR_NOT_AVAILABLE until the registry is reachable again") {
		t.Errorf("no error line naming the consequence:\n%s", h.logs.String())
	}
	select {
	case <-a.Done():
		t.Fatal("an outage ended the session")
	default:
	}
	f.mode.Store(faultNone)
	h.tick(1)
	if err := a.Err(); err != nil {
		t.Fatalf("not healthy after recovery: %v", err)
	}
	if n, err := a.Owner("g"); err != nil || n.ID != 1 {
		t.Fatalf("Owner after recovery = %v, %v", n, err)
	}
	if !contains(h.logs.String(), "registry reachable again") {
		t.Error("no recovery line")
	}
}

// A call that hangs returns no error, but the view still stops being
// trusted TTL − heartbeat after the last successful send.
func TestHungRegistryTurnsStaleWithoutAnError(t *testing.T) {
	h, f, a := startFaulty(t)
	f.mode.Store(faultHang)
	h.clk.Advance(testHB) // the heartbeat starts and hangs
	h.clk.Advance(testTTL - 2*testHB - time.Millisecond)
	if err := a.Err(); err != nil {
		t.Fatalf("untrusted before TTL - heartbeat: %v", err)
	}
	h.clk.Advance(time.Millisecond)
	if err := a.Err(); !errors.Is(err, ErrUnavailable) || !contains(err.Error(), "ago") {
		t.Fatalf("Err at TTL - heartbeat since the last success = %v", err)
	}
	close(f.hung) // the call completes; the row had not expired
	waitFor(t, "recovery", func() bool { return a.Healthy() })
}

func TestOwnershipLostWhenAnotherIncarnationTakesTheRow(t *testing.T) {
	h := newHarness(t)
	a := h.start(h.store, h.cfg(1, "a"))
	held := a.HeldVersion()
	v := h.write(a.Key(), other(1, "usurper"), 10)
	h.clk.Advance(testHB)
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the id was taken")
	}
	var le *LostError
	if !errors.As(a.Err(), &le) {
		t.Fatalf("Err = %v, want a LostError", a.Err())
	}
	if le.HeldVersion != held || le.Version != v || le.Holder.Incarnation != "usurper" {
		t.Fatalf("evidence %+v", le)
	}
	if _, err := a.Owner("g"); err == nil {
		t.Fatal("a node that lost its id still answers ownership")
	}
	if !contains(h.logs.String(), "NODE ID LOST") {
		t.Error("loss not logged loudly")
	}
	// The usurper's row survives this node's Close.
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.row(a.Key()); got != v {
		t.Fatal("Close of a lost session touched the row")
	}
}

// An outage longer than the TTL lets the row expire; when the registry
// returns, the id is free and taken back, not reported lost.
func TestExpiredRowIsReacquiredAfterALongOutage(t *testing.T) {
	h, f, a := startFaulty(t)
	f.mode.Store(faultFail)
	for range 6 { // 12 s: past the 10 s TTL
		h.tick(1)
	}
	if v, _ := h.row(a.Key()); v != 0 {
		t.Fatal("row did not expire")
	}
	f.mode.Store(faultNone)
	h.tick(1)
	if err := a.Err(); err != nil {
		t.Fatalf("not healthy after re-acquiring: %v", err)
	}
	v, n := h.row(a.Key())
	if v == 0 || n.Incarnation != "a" || a.HeldVersion() != v {
		t.Fatalf("row %d %+v, held %d", v, n, a.HeldVersion())
	}
	if !contains(h.logs.String(), "re-acquiring") {
		t.Error("re-acquisition not logged")
	}
}

// A heartbeat applied at the store whose answer never arrived leaves a stale
// held version; the next heartbeat recognises its own incarnation and goes on.
func TestLostAnswerIsRecognisedAsOwnWrite(t *testing.T) {
	h, f, a := startFaulty(t)
	f.mode.Store(faultLoseAnswer)
	h.tick(1)
	if a.Healthy() {
		t.Fatal("a heartbeat without an answer counted as success")
	}
	stale := a.HeldVersion()
	if v, _ := h.row(a.Key()); v == stale {
		t.Fatal("the lost heartbeat did not apply at the store")
	}
	h.tick(1)
	if err := a.Err(); err != nil {
		t.Fatalf("after the answer was lost: %v", err)
	}
	if v, _ := h.row(a.Key()); v != a.HeldVersion() {
		t.Fatalf("held %d, store %d", a.HeldVersion(), v)
	}
}

func TestBootRetriesAnUnreachableRegistry(t *testing.T) {
	h := newHarness(t)
	f := newFaultKV(h.store)
	f.mode.Store(faultFail)
	res := startAsync(context.Background(), f, h.cfg(1, "a"))
	for range 3 {
		waitFor(t, "boot retry armed", func() bool { return h.clk.Waiters() == 1 })
		h.clk.Advance(testHB)
	}
	f.mode.Store(faultNone)
	waitFor(t, "boot retry armed", func() bool { return h.clk.Waiters() == 1 })
	h.clk.Advance(testHB)
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { _ = r.s.Close(context.Background()) })
	if !contains(h.logs.String(), "registry unreachable at boot") {
		t.Error("boot outage not logged")
	}
}

func TestBootFailsFastOnARefusedCredential(t *testing.T) {
	h := newHarness(t)
	f := newFaultKV(h.store)
	f.mode.Store(faultAuth)
	_, err := Start(context.Background(), f, h.cfg(1, "a"))
	if !queen.IsAuth(err) {
		t.Fatalf("Start with a refused credential = %v", err)
	}
}

func TestBootGivesUpWhenItsContextEnds(t *testing.T) {
	h := newHarness(t)
	f := newFaultKV(h.store)
	f.mode.Store(faultFail)
	ctx, cancel := context.WithCancel(context.Background())
	res := startAsync(ctx, f, h.cfg(1, "a"))
	waitFor(t, "boot retry armed", func() bool { return h.clk.Waiters() == 1 })
	cancel()
	if r := <-res; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Start after cancel = %v", r.err)
	}
}
