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
// entry, partitions ascend, a topic with nothing for a member is absent. The
// partition lists share one backing array (a group of 1,000 members over 10
// topics would otherwise grow 10,000 slices), each capped at its length so
// that a caller's append copies.
func (g *group) assignment(own [][]int) Assignment {
	// Size each member's map for the topics it got, and the array for all.
	topics := make([]int, len(g.members))
	last := make([]int, len(g.members)) // per member: 1 + the last topic counted
	total := 0
	for ti, o := range own {
		total += len(o)
		for _, mi := range o {
			if mi >= 0 && last[mi] != ti+1 {
				last[mi] = ti + 1
				topics[mi]++
			}
		}
	}
	out := make(Assignment, len(g.members))
	for mi, m := range g.members {
		out[m.ID] = make(map[string][]int32, topics[mi])
	}
	buf := make([]int32, 0, total)
	count := make([]int, len(g.members))
	fill := make([]int, len(g.members)) // per member: next index in buf for this topic
	var touched []int
	for ti, o := range own {
		touched = touched[:0]
		for _, mi := range o {
			if mi < 0 {
				continue
			}
			if count[mi] == 0 {
				touched = append(touched, mi)
			}
			count[mi]++
		}
		end := len(buf)
		for _, mi := range touched {
			fill[mi] = end
			end += count[mi]
		}
		buf = buf[:end]
		for p, mi := range o {
			if mi >= 0 {
				buf[fill[mi]] = int32(p)
				fill[mi]++
			}
		}
		for _, mi := range touched {
			hi := fill[mi]
			out[g.members[mi].ID][g.topics[ti]] = buf[hi-count[mi] : hi : hi]
			count[mi] = 0
		}
	}
	return out
}
