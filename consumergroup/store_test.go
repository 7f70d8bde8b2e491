package consumergroup

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/queen"
)

// TestOwnerMoveContinuesTheGroup: a second node loading the group from the
// store continues its epochs and assignments (no reset to epoch 0, no
// reassignment), moves the fence, and the first node's next write fails
// NOT_COORDINATOR.
func TestOwnerMoveContinuesTheGroup(t *testing.T) {
	e := newEnv(t)
	ownA := testsupport.NewOwners(1, 1)
	e.m = e.manager(ownA, true, 1)
	tid := e.topics.add("orders", 4)
	e.twoSettled("orders")
	before := e.g().members["m1"].assigned
	if len(e.kv.Keys(queen.FenceKey("g"))) != 1 || len(e.kv.Keys(queen.ConsumerGroupPrefix("g"))) != 3 {
		t.Fatalf("rows: %v %v", e.kv.Keys(queen.FenceKey("g")), e.kv.Keys(queen.ConsumerGroupPrefix("g")))
	}

	b := e.manager(testsupport.NewOwners(2, 2), true, 2)
	full := hbReq("g", "m1", 2, before)
	full.RebalanceTimeoutMillis, full.SubscribedTopicNames = 60000, []string{"orders"}
	r := e.ok(e.send(b, full))
	if r.MemberEpoch != 2 || r.Assignment == nil || !assigned(r).equal(before) {
		t.Fatalf("at the new owner: epoch %d assignment %v, want 2 and %v", r.MemberEpoch, assigned(r), before)
	}
	g, _ := b.reg.Held(groupKey{ID: "g"})
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
	e.kv.Fail(&queen.Error{Kind: queen.KindTransient, Status: 503, Route: "POST /api/v1/kv", Message: "down"})
	e.refused(e.join("m2", "orders"), kerr.CoordinatorNotAvailable.Code, "")
	e.kv.Fail(nil)
	// m2 was never stored: m1 is alone at epoch 1 again.
	r := e.ok(e.hb("m1", 1, nil))
	if r.MemberEpoch != 1 {
		t.Fatalf("m1 epoch %d", r.MemberEpoch)
	}
	if _, ok := e.g().members["m2"]; ok {
		t.Fatal("a member whose write failed is in the group")
	}
}

// TestConcurrentRequestsLoadAGroupOnce: requests arriving together for a
// group only in the store load it once; a second load's takeover write
// fenced the first's group object, and its members were answered
// NOT_COORDINATOR by their own node (seen with franz-go's 848 tests).
func TestConcurrentRequestsLoadAGroupOnce(t *testing.T) {
	for round := 0; round < 20; round++ {
		e := newEnv(t)
		e.topics.add("orders", 4)
		e.twoSettled("orders")
		e.m = e.manager(nil, false, 1) // a restart: the group is only in the store
		e.kv.SetDelay(time.Millisecond)
		var wg sync.WaitGroup
		codes := make(chan int16, 16)
		for i := 0; i < 8; i++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				codes <- e.send(e.m, hbReq("g", "m1", 2, nil)).ErrorCode
			}()
			go func() {
				defer wg.Done()
				_, _, code := e.m.Holds(context.Background(), "", nil, "g")
				codes <- code
			}()
		}
		wg.Wait()
		close(codes)
		for c := range codes {
			if c != 0 {
				t.Fatalf("round %d: a request was answered %d", round, c)
			}
		}
	}
}

// TestCommitCheckDoesNotWaitForAStateWrite: a heartbeat writing the
// group's state (a Queen call, under the group's lock) does not hold up a
// commit's member-epoch check, which reads the epochs last stored.
func TestCommitCheckDoesNotWaitForAStateWrite(t *testing.T) {
	e := newEnv(t)
	e.topics.add("orders", 2)
	e.ok(e.join("m1", "orders"))
	gate, inKV := make(chan struct{}), make(chan struct{}, 4)
	e.kv.Gate(gate, inKV)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.join("m2", "orders")
	}()
	<-inKV // m2's join is writing
	e.commitCheckAnswers("a heartbeat's state write")
	e.kv.Gate(nil, nil)
	close(gate)
	<-done
}

// TestLoadWithOverlappingTargetsRecomputes: rows whose targets overlap (a
// write cut between calls) load at a new group epoch, so the next
// heartbeat computes a consistent target.
func TestLoadWithOverlappingTargetsRecomputes(t *testing.T) {
	e := newEnv(t)
	tid := e.topics.add("orders", 2)
	e.ok(e.join("m1", "orders"))
	e.ok(e.join("m2", "orders"))
	// m2's stored target also claims m1's partitions.
	g := e.g()
	g.mu.Lock()
	g.target["m2"] = allOf(tid, 2)
	g.markDirty("m2")
	g.persist(context.Background())
	g.mu.Unlock()
	e.m = e.manager(nil, false, 1)
	e.ok(e.hb("m1", 1, nil))
	ge, ae := e.epochs()
	if ge != 3 || ae != 3 {
		t.Fatalf("epochs after load %d/%d, want 3/3", ge, ae)
	}
}
