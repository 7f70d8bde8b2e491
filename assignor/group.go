package assignor

import (
	"slices"
	"strings"
)

// group is a Spec reduced to what both assignors work on, in a canonical
// order so that the result never depends on the order of the Spec's slices
// and maps: members sorted by id, topics sorted by name, each member's
// subscription as ascending topic indices.
type group struct {
	members []*Member // sorted by ID, one per ID
	topics  []string  // subscribed topics present in Spec.Partitions with at least one partition, sorted
	counts  []int32   // partition count per topic index
	subs    [][]int   // per member: ascending indices into topics
	// subscribers per topic: ascending member indices.
	subscribers [][]int
}

func newGroup(s Spec) *group {
	g := &group{}
	ms := make([]*Member, len(s.Members))
	for i := range s.Members {
		ms[i] = &s.Members[i]
	}
	// Stable, so that of two members sharing an id (a caller's bug) the first
	// given wins; ids are unique in every valid Spec.
	slices.SortStableFunc(ms, func(a, b *Member) int { return strings.Compare(a.ID, b.ID) })
	for i, m := range ms {
		if i > 0 && m.ID == ms[i-1].ID {
			continue
		}
		g.members = append(g.members, m)
	}

	// Only topics somebody subscribes to and that exist count.
	seen := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.Topics {
			if n, ok := s.Partitions[t]; ok && n > 0 && !seen[t] {
				seen[t] = true
				g.topics = append(g.topics, t)
			}
		}
	}
	slices.Sort(g.topics)
	index := make(map[string]int, len(g.topics))
	g.counts = make([]int32, len(g.topics))
	for i, t := range g.topics {
		index[t] = i
		g.counts[i] = s.Partitions[t]
	}
	g.subs = make([][]int, len(g.members))
	g.subscribers = make([][]int, len(g.topics))
	for mi, m := range g.members {
		var ts []int
		for _, t := range m.Topics {
			if ti, ok := index[t]; ok {
				ts = append(ts, ti)
			}
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
		g.subs[mi] = ts
		for _, ti := range ts {
			g.subscribers[ti] = append(g.subscribers[ti], mi)
		}
	}
	return g
}

// homogeneous reports whether every member has the same (effective)
// subscription: Kafka's SubscriptionType.HOMOGENEOUS.
func (g *group) homogeneous() bool {
	for mi := 1; mi < len(g.members); mi++ {
		if !slices.Equal(g.subs[mi], g.subs[0]) {
			return false
		}
	}
	return true
}

// owners returns, per topic index, the member index that currently owns each
// partition, or -1. Only a member's Owned partitions of topics it still
// subscribes to and that still exist count; a partition two members claim
// goes to the first by id (a valid target assignment never has one).
func (g *group) owners() [][]int {
	own := make([][]int, len(g.topics))
	for ti, n := range g.counts {
		o := make([]int, n)
		for p := range o {
			o[p] = -1
		}
		own[ti] = o
	}
	for mi, m := range g.members {
		if len(m.Owned) == 0 {
			continue
		}
		for _, ti := range g.subs[mi] {
			o := own[ti]
			for _, p := range m.Owned[g.topics[ti]] {
				if p >= 0 && int(p) < len(o) && o[p] == -1 {
					o[p] = mi
				}
			}
		}
	}
	return own
}

// assignment turns per-topic owners into an Assignment: every member has an
// entry, partitions ascend, a topic with nothing for a member is absent.
func (g *group) assignment(own [][]int) Assignment {
	out := make(Assignment, len(g.members))
	for _, m := range g.members {
		out[m.ID] = map[string][]int32{}
	}
	for ti, o := range own {
		t := g.topics[ti]
		for p, mi := range o {
			if mi < 0 {
				continue
			}
			id := g.members[mi].ID
			out[id][t] = append(out[id][t], int32(p))
		}
	}
	return out
}
