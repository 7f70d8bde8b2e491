package consumergroup

import (
	"fmt"
	"testing"
)

// BenchmarkHeartbeatSteady is one partial heartbeat of a member of a
// stable 6-member group over 24 partitions: nothing changes, nothing is
// written.
func BenchmarkHeartbeatSteady(b *testing.B) {
	e := newEnv(b)
	e.topics.add("orders", 24)
	members := settle(e, 6)
	req := hbReq(e.group, "m0", members["m0"], nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if r := e.m.Heartbeat(b.Context(), e.client(), req); r.ErrorCode != 0 {
			b.Fatal(r.ErrorCode)
		}
	}
}

// BenchmarkRebalanceJoin is a seventh member joining a stable 6-member
// group over 24 partitions, until the group is stable again: the join,
// every member's revocation and the new member's assignment, each
// heartbeat writing the group's rows to the in-memory store.
func BenchmarkRebalanceJoin(b *testing.B) {
	b.ReportAllocs()
	for i := range b.N {
		b.StopTimer()
		e := newEnv(b)
		e.group = fmt.Sprint("g", i)
		e.topics.add("orders", 24)
		settle(e, 6)
		b.StartTimer()
		e.ok(e.join("m6", "orders"))
		settle(e, 7)
	}
}

// settle joins members m0..m(n-1) not yet in the group and heartbeats them
// all (each reporting what it was last assigned) until the group is
// Stable; it returns their epochs.
func settle(e *env, n int) map[string]int32 {
	e.t.Helper()
	owned := map[string]parts{}
	epochs := map[string]int32{}
	for i := range n {
		id := fmt.Sprint("m", i)
		g := e.g()
		if g != nil {
			g.mu.Lock()
			m := g.members[id]
			if m != nil {
				epochs[id], owned[id] = m.epoch, m.assigned
			}
			g.mu.Unlock()
			if m != nil {
				continue
			}
		}
		r := e.ok(e.join(id, "orders"))
		epochs[id], owned[id] = r.MemberEpoch, assigned(r)
	}
	for round := 0; ; round++ {
		for i := range n {
			id := fmt.Sprint("m", i)
			r := e.ok(e.hb(id, epochs[id], owned[id]))
			epochs[id] = r.MemberEpoch
			if r.Assignment != nil {
				owned[id] = assigned(r)
			}
		}
		g := e.g()
		g.mu.Lock()
		st := g.state()
		g.mu.Unlock()
		if st == StateStable {
			return epochs
		}
		if round > 10 {
			e.t.Fatalf("group did not settle: %s", st)
		}
	}
}
