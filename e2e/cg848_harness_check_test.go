package e2e

import (
	"strings"
	"testing"
	"time"
)

// The KIP-848 tests' checkers, on made-up histories: a checker that cannot
// see a violation would pass every run.

func TestOwnershipTimelineCatchesDoubleOwnership(t *testing.T) {
	o := newOwnership()
	o.assigned("a", []int32{1, 2})
	o.assigned("b", []int32{3})
	if p := o.problems(); len(p) != 0 {
		t.Fatalf("disjoint assignments: %v", p)
	}
	// b is given 2 before a's revoke of it returned.
	o.assigned("b", []int32{2})
	if p := o.problems(); len(p) != 1 || !strings.Contains(p[0], "partition 2 assigned to b") || !strings.Contains(p[0], "while a still owned it") {
		t.Fatalf("double ownership of 2: %v", p)
	}
	// Revoked first, then assigned: no new violation.
	o.released("b", "revoked", []int32{3})
	o.assigned("a", []int32{3})
	if p := o.problems(); len(p) != 1 {
		t.Fatalf("hand-over after the revoke returned: %v", p)
	}
	o.released("a", "lost", []int32{1})
	if p := o.problems(); len(p) != 2 || !strings.Contains(p[1], "a lost [1]") {
		t.Fatalf("a lost callback: %v", p)
	}
	if got := o.held("a"); len(got) != 1 || got[0] != 3 {
		t.Fatalf("a holds %v, want [3] (2 went to b, 1 was lost)", got)
	}
}

func TestJudgeDelivery(t *testing.T) {
	now := time.Now()
	acked := []rec{
		{partition: 0, offset: 0, value: []byte("r-0")},
		{partition: 0, offset: 1, value: []byte("r-1")},
		{partition: 0, offset: 2, value: []byte("r-2")},
	}
	member := func(name string, committed map[int32]int64, got ...consumed) *gm {
		return &gm{name: name, committed: committed, got: got}
	}
	// a processed 0 and 1 but its commit of 1 failed (committed to 1);
	// b re-read 1: a duplicate inside the at-least-once window.
	a := member("a", map[int32]int64{0: 1}, consumed{0, 0, "r-0", now}, consumed{0, 1, "r-1", now})
	b := member("b", map[int32]int64{0: 3}, consumed{0, 1, "r-1", now.Add(time.Second)}, consumed{0, 2, "r-2", now.Add(time.Second)})
	v, p := judgeDelivery(acked, []*gm{a, b})
	if len(p) != 0 || v.duplicates != 1 || v.consumed != 4 || v.acked != 3 {
		t.Fatalf("a duplicate inside the window: %+v %v", v, p)
	}
	// a had committed past 1 (to 2): b re-reading it is the group's
	// position going backwards.
	a.committed[0] = 2
	if _, p := judgeDelivery(acked, []*gm{a, b}); len(p) != 1 || !strings.Contains(p[0], "0@1 processed by b after a had committed past it") {
		t.Fatalf("a re-read below a commit: %v", p)
	}
	// Nobody processed 2, and 0 came back with another value.
	a.committed[0] = 1
	a.got[0].value = "other"
	if _, p := judgeDelivery(acked, []*gm{a}); len(p) != 2 || !strings.Contains(p[0], "1 acknowledged records never processed: [0@2=r-2]") || !strings.Contains(p[1], `processed "other"`) {
		t.Fatalf("a lost record and a wrong value: %v", p)
	}
}

func TestLongestGap(t *testing.T) {
	t0 := time.Now()
	w := [2]time.Time{t0, t0.Add(10 * time.Second)}
	at := func(s float64) consumed { return consumed{at: t0.Add(time.Duration(s * float64(time.Second)))} }
	if g := longestGap([]consumed{at(-1), at(1), at(2), at(6), at(9), at(11)}, w); g != 4*time.Second {
		t.Fatalf("longest gap %s, want 4s (2 → 6)", g)
	}
	if g := longestGap(nil, w); g != 10*time.Second {
		t.Fatalf("nothing processed: %s, want the window", g)
	}
}
