package consumergroup

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/queen"
)

// TestOwnerMoveContinuesTheGroup: a second node loading the group from the
// store continues its epochs and assignments (no reset to epoch 0, no
// reassignment), moves the fence, and the first node's next write fails
// NOT_COORDINATOR.
func TestOwnerMoveContinuesTheGroup(t *testing.T) {
	e := newEnv(t)
	ownA := &owners{self: 1, owner: 1}
	e.m = e.manager(ownA, true, 1)
	tid := e.topics.add("orders", 4)
	e.ok(e.join("m1", "orders"))
	e.ok(e.join("m2", "orders"))
	r1 := e.ok(e.hb("m1", 1, nil))
	e.ok(e.hb("m1", 1, assigned(r1)))
	r2 := e.ok(e.hb("m2", 2, parts{}))
	e.ok(e.hb("m2", 2, assigned(r2)))
	before := e.g().members["m1"].assigned
	if len(e.kv.keys(queen.FenceKey("g"))) != 1 || len(e.kv.keys(queen.ConsumerGroupPrefix("g"))) != 3 {
		t.Fatalf("rows: %v %v", e.kv.keys(queen.FenceKey("g")), e.kv.keys(queen.ConsumerGroupPrefix("g")))
	}

	b := e.manager(&owners{self: 2, owner: 2}, true, 2)
	full := hbReq("g", "m1", 2, before)
	full.RebalanceTimeoutMillis, full.SubscribedTopicNames = 60000, []string{"orders"}
	r := e.ok(e.send(b, full))
	if r.MemberEpoch != 2 || r.Assignment == nil || !assigned(r).equal(before) {
		t.Fatalf("at the new owner: epoch %d assignment %v, want 2 and %v", r.MemberEpoch, assigned(r), before)
	}
	b.mu.Lock()
	g := b.groups[groupKey{"", "g"}]
	b.mu.Unlock()
	if g.epoch != 2 || g.assignmentEpoch != 2 || g.state() != StateStable {
		t.Fatalf("loaded group: epoch %d/%d %s", g.epoch, g.assignmentEpoch, g.state())
	}
	// The old owner still believes it owns the group: its next write
	// (m3 joining) meets the moved row and it lets go.
	e.refused(e.join("m3", "orders"), kerr.NotCoordinator.Code, "")
	if e.g() != nil {
		t.Fatal("old owner kept the group after losing it")
	}
	_ = tid
}

// TestFailedWriteIsNeverAnsweredAsSuccess: a join whose rows cannot be
// written is refused, and the group is reloaded from the store afterwards.
func TestFailedWriteIsNeverAnsweredAsSuccess(t *testing.T) {
	e := newEnv(t)
	e.topics.add("orders", 2)
	e.ok(e.join("m1", "orders"))
	e.kv.mu.Lock()
	e.kv.fail = &queen.Error{Kind: queen.KindTransient, Status: 503, Route: "POST /api/v1/kv", Message: "down"}
	e.kv.mu.Unlock()
	e.refused(e.join("m2", "orders"), kerr.CoordinatorNotAvailable.Code, "")
	e.kv.mu.Lock()
	e.kv.fail = nil
	e.kv.mu.Unlock()
	// m2 was never stored: m1 is alone at epoch 1 again.
	r := e.ok(e.hb("m1", 1, nil))
	if r.MemberEpoch != 1 {
		t.Fatalf("m1 epoch %d", r.MemberEpoch)
	}
	if _, ok := e.g().members["m2"]; ok {
		t.Fatal("a member whose write failed is in the group")
	}
}
