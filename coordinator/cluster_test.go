package coordinator

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/queen"
)

// movableOwnership is a node's view of the live set, which a test moves.
type movableOwnership struct {
	mu    sync.Mutex
	self  ownership.Broker
	owner ownership.Broker
	err   error
}

func (o *movableOwnership) Owner(string) (ownership.Broker, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.owner, o.err
}

func (o *movableOwnership) Redirect(string) (ownership.Broker, bool) {
	return ownership.Broker{}, false
}

func (o *movableOwnership) Self() ownership.Broker { return o.self }

func (o *movableOwnership) set(b ownership.Broker, err error) {
	o.mu.Lock()
	o.owner, o.err = b, err
	o.mu.Unlock()
}

var (
	node1 = ownership.Broker{NodeID: 1, Host: "n1", Port: 9092}
	node2 = ownership.Broker{NodeID: 2, Host: "n2", Port: 9093}
)

// clusterPair is two fenced coordinators over ONE store, each believing it
// owns every group (the stale-view window the fence exists for).
func clusterPair(t *testing.T) (a, b *harness, oa, ob *movableOwnership) {
	oa = &movableOwnership{self: node1, owner: node1}
	ob = &movableOwnership{self: node2, owner: node2}
	a = newHarness(t, func(c *Config) { c.Fenced, c.NodeID, c.Incarnation, c.Ownership = true, 1, "inc-1", oa })
	b = newHarness(t, func(c *Config) { c.Fenced, c.NodeID, c.Incarnation, c.Ownership = true, 2, "inc-2", ob })
	b.kv = a.kv
	b.c.cfg.KV = a.kv
	b.clock = a.clock
	b.c.clock = a.clock
	return a, b, oa, ob
}

func TestStaleOwnerCanNeverOverwriteANewerCommit(t *testing.T) {
	a, b, _, _ := clusterPair(t)
	// Node 1 coordinates billing; its consumer commits 10, then 16 is in
	// flight while ownership moves to node 2 without node 1 noticing.
	m1, gen1 := a.stableSolo("billing")
	if c := a.commit(commitReq("billing", m1, gen1, "orders", map[int32]int64{3: 10})); c[0] != 0 {
		t.Fatalf("first commit %d", c[0])
	}
	m2, gen2 := b.stableSolo("billing")
	if c := b.commit(commitReq("billing", m2, gen2, "orders", map[int32]int64{3: 50})); c[0] != 0 {
		t.Fatalf("new owner's commit %d", c[0])
	}
	// The stale owner's commit of 16 loses the fence: NOT_COORDINATOR, and
	// 50 stays.
	if c := a.commit(commitReq("billing", m1, gen1, "orders", map[int32]int64{3: 16})); c[0] != kerr.NotCoordinator.Code {
		t.Fatalf("stale owner's commit answered %d", c[0])
	}
	if f := a.fetch("billing", "orders", 3); f.Topics[0].Partitions[0].Offset != 50 {
		t.Fatalf("offset regressed to %d", f.Topics[0].Partitions[0].Offset)
	}
	// And node 1 dropped the group: its member is unknown now.
	if a.state("billing") != "absent" {
		t.Fatalf("stale owner still holds the group: %s", a.state("billing"))
	}
	if code := a.heartbeat("billing", m1, gen1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("stale member heartbeat %d", code)
	}
	// The same holds for an assign() commit and an offset delete from the
	// stale side while it still holds an old version.
	if c := b.commit(commitReq("plain", "", -1, "orders", map[int32]int64{0: 5})); c[0] != 0 {
		t.Fatal(c)
	}
	if c := a.commit(commitReq("plain", "", -1, "orders", map[int32]int64{0: 100})); c[0] != 0 {
		t.Fatal("takeover of a group this node never held must read the fence and succeed", c)
	}
	if c := b.commit(commitReq("plain", "", -1, "orders", map[int32]int64{0: 6})); c[0] != kerr.NotCoordinator.Code {
		t.Fatalf("b now holds a stale version: %d", c[0])
	}
	if f := b.fetch("plain", "orders", 0); f.Topics[0].Partitions[0].Offset != 100 {
		t.Fatalf("plain regressed to %d", f.Topics[0].Partitions[0].Offset)
	}
	if r := b.offsetDelete("plain", map[string][]int32{"orders": {0}}); r.ErrorCode != 0 {
		// b dropped its state; its next write is a takeover again
		t.Fatalf("takeover delete %d", r.ErrorCode)
	}
	if c := a.commit(commitReq("plain", "", -1, "orders", map[int32]int64{0: 7})); c[0] != kerr.NotCoordinator.Code {
		t.Fatalf("a after b's fenced delete: %d", c[0])
	}
}

// A new owner takes the fence when its first member joins, before that
// member reads where to start: the old owner, still blind to the move,
// can then commit nothing its successor's members would start below.
// With the fence taken only at the new owner's first commit, the old
// owner's 16 landed after the new member had read 10, and the new owner's
// commit of 12 took the committed offset back from 16 (the chaos test's
// committed-offset regressions).
func TestNewOwnerFencesTheOldOneAtJoin(t *testing.T) {
	a, b, _, _ := clusterPair(t)
	m1, gen1 := a.stableSolo("billing")
	if c := a.commit(commitReq("billing", m1, gen1, "orders", map[int32]int64{3: 10})); c[0] != 0 {
		t.Fatalf("first commit %d", c[0])
	}
	m2, gen2 := b.stableSolo("billing")
	if c := a.commit(commitReq("billing", m1, gen1, "orders", map[int32]int64{3: 16})); c[0] != kerr.NotCoordinator.Code {
		t.Fatalf("the old owner's commit after the new owner's join answered %d, want NOT_COORDINATOR", c[0])
	}
	if f := b.fetch("billing", "orders", 3); f.Topics[0].Partitions[0].Offset != 10 {
		t.Fatalf("the new member starts from %d, want 10", f.Topics[0].Partitions[0].Offset)
	}
	if c := b.commit(commitReq("billing", m2, gen2, "orders", map[int32]int64{3: 12})); c[0] != 0 {
		t.Fatalf("new owner's commit %d", c[0])
	}
	// Generations continue across owners, as Kafka's loaded group metadata
	// makes them.
	if gen2 <= gen1 {
		t.Fatalf("the new owner's generation %d does not continue the old owner's %d", gen2, gen1)
	}
	// The old owner's member rejoins there (its view still stale): that
	// join takes the fence back, and the new owner's next commit is refused.
	m3, gen3 := a.stableSolo("billing")
	if gen3 <= gen2 {
		t.Fatalf("generation %d after %d", gen3, gen2)
	}
	if c := b.commit(commitReq("billing", m2, gen2, "orders", map[int32]int64{3: 13})); c[0] != kerr.NotCoordinator.Code {
		t.Fatalf("b after a took the fence back: %d", c[0])
	}
	if f := a.fetch("billing", "orders", 3); f.Topics[0].Partitions[0].Offset != 12 {
		t.Fatalf("offset %d, want 12", f.Topics[0].Partitions[0].Offset)
	}
	if c := a.commit(commitReq("billing", m3, gen3, "orders", map[int32]int64{3: 14})); c[0] != 0 {
		t.Fatalf("a's commit %d", c[0])
	}
}

// A join whose fence write fails on a transient KV error is refused with a
// retriable code and takes the fence on the member's retry.
func TestJoinRetriesAFailedFenceClaim(t *testing.T) {
	a, _, _, _ := clusterPair(t)
	a.kv.setFail(func(ops []queen.KVOp) error {
		return &queen.Error{Kind: queen.KindTransient, Route: "POST /api/v1/kv", Message: "injected"}
	})
	if j := recv(t, a.joinAsync(joinReq(3, "g", ""))); j.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("join with the KV failing answered %d", j.ErrorCode)
	}
	a.kv.setFail(nil)
	m, gen := a.stableSolo("g")
	if c := a.commit(commitReq("g", m, gen, "orders", map[int32]int64{0: 1})); c[0] != 0 {
		t.Fatalf("commit %d", c[0])
	}
	if _, ok := a.kv.get(queen.FenceKey("g")); !ok {
		t.Fatal("no fence row after the join")
	}
}

func TestOwnFenceVersionIsRetriedOnce(t *testing.T) {
	a, _, _, _ := clusterPair(t)
	a.commit(commitReq("g", "", -1, "orders", map[int32]int64{0: 1}))
	// Our own previous write applied but its answer was lost: the store's
	// fence is ours at a version we do not hold.
	g := a.c.lookup(a.cl, "g")
	g.wmu.Lock()
	g.fenceVer--
	g.wmu.Unlock()
	if c := a.commit(commitReq("g", "", -1, "orders", map[int32]int64{0: 2})); c[0] != 0 {
		t.Fatalf("own fence retry %d", c[0])
	}
	// A fence naming another incarnation of the same node id is not ours.
	a.kv.put(queen.FenceKey("g"), fenceValue{Node: 1, Incarnation: "older"})
	if c := a.commit(commitReq("g", "", -1, "orders", map[int32]int64{0: 3})); c[0] != kerr.NotCoordinator.Code {
		t.Fatalf("foreign fence %d", c[0])
	}
	if f := a.fetch("g", "orders", 0); f.Topics[0].Partitions[0].Offset != 2 {
		t.Fatalf("offset %d", f.Topics[0].Partitions[0].Offset)
	}
}

func TestNonOwnerAnswersNotCoordinator(t *testing.T) {
	a, _, oa, _ := clusterPair(t)
	m, gen := a.stableSolo("g")
	a.commit(commitReq("g", m, gen, "orders", map[int32]int64{0: 9}))
	parked := a.joinAsync(joinReq(3, "g", "")) // opens a rebalance, parks
	oa.set(node2, nil)
	ctx := context.Background()
	if r := recv(t, a.joinAsync(joinReq(3, "g", m))); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("join %d", r.ErrorCode)
	}
	if r := recv(t, parked); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("a join parked when ownership moved: %d", r.ErrorCode)
	}
	if s := a.c.SyncGroup(ctx, a.cl, syncReq("g", m, gen, nil)); s.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("sync %d", s.ErrorCode)
	}
	if c := a.heartbeat("g", m, gen); c != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat %d", c)
	}
	if c := a.leave("g", m); c != kerr.NotCoordinator.Code {
		t.Fatalf("leave %d", c)
	}
	if c := a.commit(commitReq("g", m, gen, "orders", map[int32]int64{0: 1})); c[0] != kerr.NotCoordinator.Code {
		t.Fatalf("commit %d", c[0])
	}
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{"g"}
	if d := a.c.DescribeGroups(ctx, a.cl, dr); d.Groups[0].ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("describe %d", d.Groups[0].ErrorCode)
	}
	if c := a.deleteGroups("g"); c[0] != kerr.NotCoordinator.Code {
		t.Fatalf("delete %d", c[0])
	}
	if r := a.offsetDelete("g", map[string][]int32{"orders": {0}}); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("offset delete %d", r.ErrorCode)
	}
	// OffsetFetch is answered anywhere.
	if f := a.fetch("g", "orders", 0); f.ErrorCode != 0 || f.Topics[0].Partitions[0].Offset != 9 {
		t.Fatalf("fetch at a non-owner %+v", f)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version = 3
	fc.CoordinatorKey = "g"
	if r := a.c.FindCoordinator(ctx, a.cl, fc); r.ErrorCode != 0 || r.NodeID != 2 || r.Host != "n2" || r.Port != 9093 {
		t.Fatalf("find coordinator %+v", r)
	}
	fc.CoordinatorType = 1 // a transaction key: the same ring's owner (issue 9)
	if r := a.c.FindCoordinator(ctx, a.cl, fc); r.ErrorCode != 0 || r.NodeID != 2 || r.Host != "n2" || r.Port != 9093 {
		t.Fatalf("transaction key in a cluster %+v", r)
	}
	// Registry unavailable: every group RPC is COORDINATOR_NOT_AVAILABLE.
	oa.set(ownership.Broker{}, ownership.ErrNoOwner)
	if c := a.heartbeat("g", m, gen); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("heartbeat without a registry %d", c)
	}
	fc.CoordinatorType = 0
	if r := a.c.FindCoordinator(ctx, a.cl, fc); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("find coordinator without a registry %d", r.ErrorCode)
	}
}

func TestDropUnownedOnLiveSetChange(t *testing.T) {
	a, _, oa, _ := clusterPair(t)
	m, gen := a.stableSolo("g")
	parked := a.joinAsync(joinReq(3, "g", ""))
	oa.set(ownership.Broker{}, ownership.ErrNoOwner)
	a.c.DropUnowned()
	if a.state("g") == "absent" {
		t.Fatal("an unknown owner is not a handover")
	}
	oa.set(node2, nil)
	a.c.DropUnowned()
	if r := recv(t, parked); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("parked join %d", r.ErrorCode)
	}
	if a.state("g") != "absent" {
		t.Fatal("group kept")
	}
	// Ownership comes back: the group starts empty and members rejoin.
	oa.set(node1, nil)
	if c := a.heartbeat("g", m, gen); c != kerr.UnknownMemberID.Code {
		t.Fatalf("returning ownership %d", c)
	}
}

func TestFindCoordinatorSingleMode(t *testing.T) {
	h := newHarness(t, nil)
	for _, typ := range []int8{0, 1} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version = 2
		r.CoordinatorKey, r.CoordinatorType = "anything", typ
		resp := h.c.FindCoordinator(context.Background(), h.cl, r)
		if resp.ErrorCode != 0 || resp.NodeID != 0 || resp.Host != "127.0.0.1" || resp.Port != 9092 {
			t.Fatalf("type %d: %+v", typ, resp)
		}
	}
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.Version = 1
	r.CoordinatorType = 7
	if resp := h.c.FindCoordinator(context.Background(), h.cl, r); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown key type %d", resp.ErrorCode)
	}
}

// TxnFence is a required check of the fence this node wrote: it passes
// while the fence is this node's, fails once this node's own commit moved
// it (TxnFenceLost answers 0: stage again) and once another node claimed
// the group (NOT_COORDINATOR, and the group is dropped).
func TestTxnFenceFollowsTheGroupsFence(t *testing.T) {
	a, b, _, _ := clusterPair(t)
	ctx := context.Background()
	if _, ok := a.c.TxnFence(a.cl, "billing"); ok {
		t.Fatal("a fence check for a group no member joined here")
	}
	m1, gen1 := a.stableSolo("billing")
	check := func(h *harness) (*queen.PreconditionError, queen.KVOp) {
		t.Helper()
		op, ok := h.c.TxnFence(h.cl, "billing")
		if !ok {
			t.Fatal("no fence check for a group joined here")
		}
		_, err := h.kv.KV(ctx, []queen.KVOp{op})
		var pe *queen.PreconditionError
		if err != nil && !errors.As(err, &pe) {
			t.Fatal(err)
		}
		return pe, op
	}
	if pe, _ := check(a); pe != nil {
		t.Fatalf("the fence a holds: %v", pe)
	}
	old, _ := a.c.TxnFence(a.cl, "billing")
	if c := a.commit(commitReq("billing", m1, gen1, "orders", map[int32]int64{3: 10})); c[0] != 0 {
		t.Fatalf("commit %d", c[0])
	}
	_, err := a.kv.KV(ctx, []queen.KVOp{old})
	var pe *queen.PreconditionError
	if !errors.As(err, &pe) {
		t.Fatalf("a check of the version before a's own commit: %v", err)
	}
	if code := a.c.TxnFenceLost(a.cl, "billing", pe); code != 0 {
		t.Fatalf("a's own commit moved the fence: %d, want 0 (stage again)", code)
	}
	if pe, _ := check(a); pe != nil {
		t.Fatalf("a fresh check after a's own commit: %v", pe)
	}
	b.stableSolo("billing") // node 2 claims the group
	pe, _ = check(a)
	if pe == nil {
		t.Fatal("the check passed after another node claimed the group")
	}
	if code := a.c.TxnFenceLost(a.cl, "billing", pe); code != kerr.NotCoordinator.Code {
		t.Fatalf("lost fence: %d", code)
	}
	if a.state("billing") != "absent" {
		t.Fatalf("a still holds the group: %s", a.state("billing"))
	}
	single := newHarness(t, nil)
	single.stableSolo("g")
	if _, ok := single.c.TxnFence(single.cl, "g"); ok {
		t.Fatal("a fence check in single (unfenced) mode")
	}
}
