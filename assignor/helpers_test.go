package assignor

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
)

// validate checks what every assignor must do: every member has an entry,
// partitions ascend with no empty topic entry, and every partition of every
// topic somebody subscribes to (and that exists) goes to exactly one of its
// subscribers, nothing else assigned.
func validate(s Spec, a Assignment) error {
	subscribed := map[string]map[string]bool{} // topic → member ids
	ids := map[string]bool{}
	for _, m := range s.Members {
		ids[m.ID] = true
		for _, t := range m.Topics {
			if s.Partitions[t] > 0 {
				if subscribed[t] == nil {
					subscribed[t] = map[string]bool{}
				}
				subscribed[t][m.ID] = true
			}
		}
	}
	if len(a) != len(ids) {
		return fmt.Errorf("%d members in the assignment, %d in the spec", len(a), len(ids))
	}
	owner := map[string][]string{}
	for t := range subscribed {
		owner[t] = make([]string, s.Partitions[t])
	}
	for id, topics := range a {
		if !ids[id] {
			return fmt.Errorf("member %q is not in the spec", id)
		}
		if topics == nil {
			return fmt.Errorf("member %q has a nil map", id)
		}
		for t, ps := range topics {
			if len(ps) == 0 {
				return fmt.Errorf("member %q has an empty entry for %s", id, t)
			}
			if !subscribed[t][id] {
				return fmt.Errorf("member %q got %s, which it does not subscribe to (or which does not exist)", id, t)
			}
			if !slices.IsSorted(ps) {
				return fmt.Errorf("member %q: %s %v not ascending", id, t, ps)
			}
			for _, p := range ps {
				if p < 0 || p >= s.Partitions[t] {
					return fmt.Errorf("member %q got %s-%d, out of range", id, t, p)
				}
				if o := owner[t][p]; o != "" {
					return fmt.Errorf("%s-%d assigned to %q and %q", t, p, o, id)
				}
				owner[t][p] = id
			}
		}
	}
	for t, os := range owner {
		for p, o := range os {
			if o == "" {
				return fmt.Errorf("%s-%d unassigned", t, p)
			}
		}
	}
	return nil
}

// counts is each member's number of partitions.
func counts(a Assignment) map[string]int {
	c := map[string]int{}
	for id, topics := range a {
		c[id] = 0
		for _, ps := range topics {
			c[id] += len(ps)
		}
	}
	return c
}

func spread(a Assignment) (lo, hi int) {
	first := true
	for _, n := range counts(a) {
		if first || n < lo {
			lo = n
		}
		if first || n > hi {
			hi = n
		}
		first = false
	}
	return lo, hi
}

// heterogeneousBalanced is Kafka's balance condition for differing
// subscriptions: for every topic with two or more subscribers, no subscriber
// holding one of its partitions has more than one partition (over all
// topics) more than any subscriber of it.
func heterogeneousBalanced(s Spec, a Assignment) error {
	c := counts(a)
	subs := map[string][]string{}
	for _, m := range s.Members {
		for _, t := range slices.Compact(slices.Sorted(slices.Values(m.Topics))) {
			if s.Partitions[t] > 0 {
				subs[t] = append(subs[t], m.ID)
			}
		}
	}
	for t, ms := range subs {
		if len(ms) < 2 {
			continue
		}
		lo := -1
		for _, id := range ms {
			if lo < 0 || c[id] < lo {
				lo = c[id]
			}
		}
		for _, id := range ms {
			if len(a[id][t]) > 0 && c[id]-lo > 1 {
				return fmt.Errorf("topic %s: %q holds %d partitions, a subscriber only %d", t, id, c[id], lo)
			}
		}
	}
	return nil
}

// moved counts the partitions whose owner differs between two assignments
// (a partition absent from before is not a move).
func moved(before, after Assignment) int {
	owner := map[string]string{}
	for id, topics := range before {
		for t, ps := range topics {
			for _, p := range ps {
				owner[fmt.Sprint(t, "/", p)] = id
			}
		}
	}
	n := 0
	for id, topics := range after {
		for t, ps := range topics {
			for _, p := range ps {
				if o, ok := owner[fmt.Sprint(t, "/", p)]; ok && o != id {
					n++
				}
			}
		}
	}
	return n
}

// withOwned gives each member of s its part of a as Owned.
func withOwned(s Spec, a Assignment) Spec {
	out := Spec{Partitions: s.Partitions}
	for _, m := range s.Members {
		m.Owned = clone(a[m.ID])
		out.Members = append(out.Members, m)
	}
	return out
}

func clone(m map[string][]int32) map[string][]int32 {
	if m == nil {
		return nil
	}
	out := make(map[string][]int32, len(m))
	for t, ps := range m {
		out[t] = slices.Clone(ps)
	}
	return out
}

// shuffled is s with its members, their topics and their owned partitions
// in another order; an assignor must not notice.
func shuffled(rng *rand.Rand, s Spec) Spec {
	out := Spec{Partitions: map[string]int32{}}
	for t, n := range s.Partitions {
		out.Partitions[t] = n
	}
	for _, m := range s.Members {
		m.Topics = slices.Clone(m.Topics)
		rng.Shuffle(len(m.Topics), func(i, j int) { m.Topics[i], m.Topics[j] = m.Topics[j], m.Topics[i] })
		m.Owned = clone(m.Owned)
		for _, ps := range m.Owned {
			rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
		}
		out.Members = append(out.Members, m)
	}
	rng.Shuffle(len(out.Members), func(i, j int) { out.Members[i], out.Members[j] = out.Members[j], out.Members[i] })
	return out
}

type specShape struct {
	members, topics int
	maxPartitions   int32
	homogeneous     bool
}

// randomSpec draws a group: topics t0.. with 0..maxPartitions partitions
// (some subscribed topics missing from Partitions), members subscribed to
// all of them or to random subsets, some static, and Owned partitions drawn
// from a plausible earlier assignment plus noise the assignor must ignore
// (partitions out of range, of unsubscribed or unknown topics, claimed twice).
func randomSpec(rng *rand.Rand, sh specShape) Spec {
	s := Spec{Partitions: map[string]int32{}}
	var topics []string
	for i := range sh.topics {
		t := fmt.Sprintf("t%d", i)
		topics = append(topics, t)
		if rng.IntN(10) > 0 {
			s.Partitions[t] = rng.Int32N(sh.maxPartitions + 1)
		}
	}
	for i := range sh.members {
		m := Member{ID: fmt.Sprintf("m%03d", i)}
		if rng.IntN(3) == 0 {
			m.InstanceID = fmt.Sprintf("i%03d", rng.IntN(1000))
		}
		for _, t := range topics {
			if sh.homogeneous || rng.IntN(2) == 0 {
				m.Topics = append(m.Topics, t)
			}
		}
		s.Members = append(s.Members, m)
	}
	// A previous owner per partition, from any member (so some no longer
	// subscribe), sometimes none, rarely two.
	for _, t := range topics {
		n := s.Partitions[t]
		if rng.IntN(4) == 0 {
			n += 2 // the topic shrank, or never existed: noise
		}
		for p := range n {
			if len(s.Members) == 0 || rng.IntN(4) == 0 {
				continue
			}
			for range 1 + rng.IntN(8)/7 {
				m := &s.Members[rng.IntN(len(s.Members))]
				if m.Owned == nil {
					m.Owned = map[string][]int32{}
				}
				m.Owned[t] = append(m.Owned[t], p)
			}
		}
	}
	// Unique instance ids, as a group guarantees.
	seen := map[string]bool{}
	for i := range s.Members {
		if id := s.Members[i].InstanceID; id != "" {
			if seen[id] {
				s.Members[i].InstanceID = ""
			}
			seen[id] = true
		}
	}
	return s
}

func equal(a, b Assignment) bool { return reflect.DeepEqual(a, b) }
