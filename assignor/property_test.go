package assignor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Property tests over seeded random groups (the seed of a failure is in its
// message; the same seed replays it).

var shapes = []specShape{
	{members: 1, topics: 1, maxPartitions: 4},
	{members: 3, topics: 2, maxPartitions: 5, homogeneous: true},
	{members: 3, topics: 3, maxPartitions: 5},
	{members: 7, topics: 4, maxPartitions: 12, homogeneous: true},
	{members: 7, topics: 4, maxPartitions: 12},
	{members: 20, topics: 6, maxPartitions: 40},
	{members: 20, topics: 6, maxPartitions: 40, homogeneous: true},
	{members: 40, topics: 2, maxPartitions: 10},
}

func forEachSpec(t *testing.T, runs int, f func(t *testing.T, rng *rand.Rand, s Spec)) {
	for si, sh := range shapes {
		for i := range runs {
			seed := uint64(si)<<32 | uint64(i)
			rng := rand.New(rand.NewPCG(seed, 21))
			s := randomSpec(rng, sh)
			t.Run(fmt.Sprintf("shape%d/seed%#x", si, seed), func(t *testing.T) { f(t, rng, s) })
			if t.Failed() {
				return
			}
		}
	}
}

// Both assignors: valid (every partition of a subscribed, existing topic
// to exactly one subscriber, nothing else) and deterministic under any
// order of members, topics and owned partitions.
func TestPropertyValidAndDeterministic(t *testing.T) {
	for _, a := range []Assignor{Uniform(), Range()} {
		t.Run(a.Name(), func(t *testing.T) {
			forEachSpec(t, 150, func(t *testing.T, rng *rand.Rand, s Spec) {
				got := a.Assign(s)
				if err := validate(s, got); err != nil {
					t.Fatal(err)
				}
				for range 3 {
					if again := a.Assign(shuffled(rng, s)); !equal(again, got) {
						t.Fatalf("another order gave another assignment:\n%v\n%v", got, again)
					}
				}
			})
		})
	}
}

// Uniform's balance: a homogeneous group's counts differ by at most one;
// any group's topics have subscribers within one of each other (Kafka's
// condition), once the balancing converged, which it does on every spec here.
func TestPropertyUniformBalanced(t *testing.T) {
	forEachSpec(t, 150, func(t *testing.T, _ *rand.Rand, s Spec) {
		got, converged := assignUniform(s)
		if !converged {
			t.Fatal("balancing did not converge")
		}
		if err := heterogeneousBalanced(s, got); err != nil {
			t.Fatal(err)
		}
		if newGroup(s).homogeneous() {
			if lo, hi := spread(got); hi-lo > 1 {
				t.Fatalf("homogeneous group spread %d..%d", lo, hi)
			}
		}
	})
}

// Uniform's stickiness: the assignment it computed, given back as the
// members' current one, is kept as it is; a member of a homogeneous group
// keeps its valid owned partitions up to floor(P/N).
func TestPropertyUniformSticky(t *testing.T) {
	forEachSpec(t, 150, func(t *testing.T, _ *rand.Rand, s Spec) {
		first := Uniform().Assign(s)
		if again := Uniform().Assign(withOwned(s, first)); !equal(again, first) {
			t.Fatalf("reassigning its own result moved %d partitions:\n%v\n%v", moved(first, again), first, again)
		}
		g := newGroup(s)
		if !g.homogeneous() || len(g.members) == 0 {
			return
		}
		total := 0
		for _, n := range g.counts {
			total += int(n)
		}
		floor := total / len(g.members)
		own := g.owners()
		for mi, m := range g.members {
			valid, kept := 0, 0
			for ti, o := range own {
				for p, owner := range o {
					if owner == mi {
						valid++
						if slices.Contains(first[m.ID][g.topics[ti]], int32(p)) {
							kept++
						}
					}
				}
			}
			if kept < min(valid, floor) {
				t.Fatalf("%s kept %d of its %d valid partitions, quota at least %d", m.ID, kept, valid, floor)
			}
		}
	})
}

// Uniform, homogeneous, from a balanced assignment: a member joining moves
// only the partitions it gets, floor(P/(N+1)); a member leaving moves only
// its own partitions.
func TestPropertyUniformJoinLeave(t *testing.T) {
	for si, sh := range shapes {
		if !sh.homogeneous {
			continue
		}
		for i := range 150 {
			seed := uint64(si)<<32 | uint64(i)
			rng := rand.New(rand.NewPCG(seed, 22))
			s := randomSpec(rng, sh)
			s = withOwned(s, Uniform().Assign(s))
			total := 0
			for _, tp := range newGroup(s).topics {
				total += int(s.Partitions[tp])
			}
			before := Uniform().Assign(s)

			joined := s
			// The newcomer's id sorts anywhere among the others'.
			newID := s.Members[rng.IntN(len(s.Members))].ID + "+"
			joined.Members = append(slices.Clone(s.Members), Member{ID: newID, Topics: s.Members[0].Topics})
			after := Uniform().Assign(joined)
			// Only the newcomer's share moves, and its share is the
			// smaller quota: floor(P/(N+1)) (Kafka's bound is the ceiling).
			n := len(joined.Members)
			if m, got := moved(before, after), counts(after)[newID]; m != total/n || got != total/n {
				t.Fatalf("seed %#x: a join moved %d partitions, the newcomer got %d, want floor(%d/%d)", seed, m, got, total, n)
			}

			if len(s.Members) < 2 {
				continue
			}
			gone := rng.IntN(len(s.Members))
			left := s
			left.Members = slices.Delete(slices.Clone(s.Members), gone, gone+1)
			after = Uniform().Assign(left)
			for _, m := range left.Members {
				for tp, ps := range before[m.ID] {
					for _, p := range ps {
						if !slices.Contains(after[m.ID][tp], p) {
							t.Fatalf("seed %#x: %s lost %s-%d when another member left", seed, m.ID, tp, p)
						}
					}
				}
			}
		}
	}
}

// Range: per topic, its subscribers in order (static by instance id, then
// dynamic by member id) hold contiguous ranges of floor(P/S) or one more,
// the larger first; owned partitions change nothing; a homogeneous group
// over topics of one size is co-partitioned.
func TestPropertyRange(t *testing.T) {
	forEachSpec(t, 150, func(t *testing.T, _ *rand.Rand, s Spec) {
		got := Range().Assign(s)
		g := newGroup(s)
		rankOf := func(m *Member) string {
			if m.InstanceID != "" {
				return "0" + m.InstanceID + "\x00" + m.ID
			}
			return "1" + m.ID
		}
		for ti, subs := range g.subscribers {
			ms := make([]*Member, len(subs))
			for i, mi := range subs {
				ms[i] = g.members[mi]
			}
			slices.SortFunc(ms, func(a, b *Member) int {
				if rankOf(a) < rankOf(b) {
					return -1
				}
				return 1
			})
			n := int(g.counts[ti])
			next := 0
			for i, m := range ms {
				size := n / len(ms)
				if i < n%len(ms) {
					size++
				}
				var want []int32
				for p := next; p < next+size; p++ {
					want = append(want, int32(p))
				}
				next += size
				if !slices.Equal(got[m.ID][g.topics[ti]], want) {
					t.Fatalf("%s: %s got %v, want %v", g.topics[ti], m.ID, got[m.ID][g.topics[ti]], want)
				}
			}
		}
		bare := Spec{Partitions: s.Partitions}
		for _, m := range s.Members {
			m.Owned = nil
			bare.Members = append(bare.Members, m)
		}
		if again := Range().Assign(bare); !equal(again, got) {
			t.Fatal("owned partitions changed range's assignment")
		}
		if g.homogeneous() && len(g.topics) > 1 && !slices.ContainsFunc(g.counts, func(n int32) bool { return n != g.counts[0] }) {
			for id, tps := range got {
				for _, ps := range tps {
					if !slices.Equal(ps, got[id][g.topics[0]]) {
						t.Fatalf("%s is not co-partitioned: %v", id, tps)
					}
				}
			}
		}
	})
}

// Range co-partitions: members with the same subscriptions over topics of
// one size hold the same partition numbers of every topic.
func TestPropertyRangeCoPartitioned(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 23))
	for i := range 300 {
		s := randomSpec(rng, specShape{members: 1 + rng.IntN(12), topics: 2 + rng.IntN(4), maxPartitions: 30, homogeneous: true})
		n := rng.Int32N(30) + 1
		for tp := range s.Partitions {
			s.Partitions[tp] = n
		}
		for _, m := range s.Members {
			for tp := range m.Topics {
				s.Partitions[m.Topics[tp]] = n // subscribed topics all exist
			}
		}
		got := Range().Assign(s)
		for id, tps := range got {
			var first []int32
			for _, ps := range tps {
				if first == nil {
					first = ps
				}
				if !slices.Equal(ps, first) {
					t.Fatalf("run %d: %s is not co-partitioned: %v", i, id, tps)
				}
			}
			if len(tps) > 0 && len(tps) != len(s.Members[0].Topics) {
				t.Fatalf("run %d: %s holds %d of %d topics", i, id, len(tps), len(s.Members[0].Topics))
			}
		}
	}
}
