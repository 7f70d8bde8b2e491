package assignor

import (
	"cmp"
	"slices"
)

type rangeAssignor struct{}

func (rangeAssignor) Name() string { return "range" }

// Assign is Kafka 4's RangeAssignor (KAFKA-16944 rewrote it in 3.9 to
// recompute from scratch: stickiness and co-partitioning could not both be
// had, and co-partitioning is the point of range). Members are ordered
// static first by instance id, then dynamic by member id; each topic's
// partitions are cut into contiguous ranges, floor(P/S) or one more, handed
// to its S subscribers in that order. Owned is not read: a static member
// that restarts keeps its place in the order and so its ranges.
func (rangeAssignor) Assign(s Spec) Assignment {
	g := newGroup(s)
	rank := make([]int, len(g.members))
	order := make([]int, len(g.members))
	for mi := range order {
		order[mi] = mi
	}
	slices.SortFunc(order, func(a, b int) int {
		ia, ib := g.members[a].InstanceID, g.members[b].InstanceID
		switch {
		case ia != "" && ib == "":
			return -1
		case ia == "" && ib != "":
			return 1
		}
		if c := cmp.Compare(ia, ib); c != 0 {
			return c
		}
		return cmp.Compare(a, b) // member id order
	})
	for r, mi := range order {
		rank[mi] = r
	}

	own := make([][]int, len(g.topics))
	for ti, n := range g.counts {
		subs := slices.Clone(g.subscribers[ti])
		slices.SortFunc(subs, func(a, b int) int { return cmp.Compare(rank[a], rank[b]) })
		o := make([]int, n)
		quota, extra := int(n)/len(subs), int(n)%len(subs)
		p := 0
		for _, mi := range subs {
			size := quota
			if extra > 0 {
				size++
				extra--
			}
			for end := p + size; p < end; p++ {
				o[p] = mi
			}
		}
		own[ti] = o
	}
	return g.assignment(own)
}
