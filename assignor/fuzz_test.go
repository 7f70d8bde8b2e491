package assignor

import (
	"fmt"
	"slices"
	"testing"
)

// specFromBytes reads a small group from fuzz input: member and topic
// counts, each topic's partition count, each member's subscription (a bit
// per topic, one bit past the topics naming a topic that does not exist)
// and instance id, then (member, topic, partition) triples of owned
// partitions, any of them stale or duplicated.
func specFromBytes(data []byte) Spec {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	members, topics := 1+next()%24, 1+next()%6
	s := Spec{Partitions: map[string]int32{}}
	for ti := range topics {
		s.Partitions[fmt.Sprintf("t%d", ti)] = int32(next() % 40)
	}
	for mi := range members {
		m := Member{ID: fmt.Sprintf("m%02d", mi)}
		mask := next()
		for ti := range topics + 1 {
			if mask&(1<<ti) != 0 {
				m.Topics = append(m.Topics, fmt.Sprintf("t%d", ti))
			}
		}
		if id := next(); id%3 == 0 {
			// Unique per member, as a group guarantees; the byte orders it.
			m.InstanceID = fmt.Sprintf("i%03d-%02d", id, mi)
		}
		s.Members = append(s.Members, m)
	}
	for len(data) >= 3 {
		m := &s.Members[next()%members]
		t := fmt.Sprintf("t%d", next()%(topics+1))
		if m.Owned == nil {
			m.Owned = map[string][]int32{}
		}
		m.Owned[t] = append(m.Owned[t], int32(next()%48))
	}
	return s
}

// reversed is s with members, topics and owned partitions in reverse order.
func reversed(s Spec) Spec {
	out := Spec{Partitions: s.Partitions}
	for _, m := range slices.Backward(s.Members) {
		m.Topics = slices.Clone(m.Topics)
		slices.Reverse(m.Topics)
		m.Owned = clone(m.Owned)
		for _, ps := range m.Owned {
			slices.Reverse(ps)
		}
		out.Members = append(out.Members, m)
	}
	return out
}

func fuzzSeeds(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 1, 6, 1, 0, 1, 1})
	f.Add([]byte{3, 2, 7, 5, 3, 0, 6, 3, 2, 0, 0, 1, 1, 0, 2, 1, 1, 5})
	f.Add([]byte{6, 3, 30, 12, 0, 7, 1, 7, 2, 1, 5, 4, 0, 2, 9, 15, 0, 9, 3, 0, 0, 0, 1, 0, 0, 2, 1, 29, 4, 3, 1})
}

// FuzzUniform: whatever the group, uniform's assignment is valid, the same
// in any order, balanced by Kafka's condition once balancing converged
// (within one for a homogeneous group), and kept as it is when given back.
func FuzzUniform(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := specFromBytes(data)
		got, converged := assignUniform(s)
		if err := validate(s, got); err != nil {
			t.Fatal(err)
		}
		if again := Uniform().Assign(reversed(s)); !equal(again, got) {
			t.Fatalf("the reverse order gave another assignment:\n%v\n%v", got, again)
		}
		if !converged {
			return
		}
		if err := heterogeneousBalanced(s, got); err != nil {
			t.Fatal(err)
		}
		if newGroup(s).homogeneous() {
			if lo, hi := spread(got); hi-lo > 1 {
				t.Fatalf("homogeneous group spread %d..%d", lo, hi)
			}
		}
		if again := Uniform().Assign(withOwned(s, got)); !equal(again, got) {
			t.Fatalf("reassigning its own result moved %d partitions", moved(got, again))
		}
	})
}

// FuzzRange: whatever the group, range's assignment is valid, the same in
// any order, per topic within one partition between subscribers, and
// independent of the owned partitions.
func FuzzRange(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s := specFromBytes(data)
		got := Range().Assign(s)
		if err := validate(s, got); err != nil {
			t.Fatal(err)
		}
		if again := Range().Assign(reversed(s)); !equal(again, got) {
			t.Fatalf("the reverse order gave another assignment:\n%v\n%v", got, again)
		}
		g := newGroup(s)
		for ti, subs := range g.subscribers {
			lo, hi := -1, 0
			for _, mi := range subs {
				n := len(got[g.members[mi].ID][g.topics[ti]])
				if lo < 0 || n < lo {
					lo = n
				}
				hi = max(hi, n)
			}
			if hi-lo > 1 {
				t.Fatalf("%s: subscribers hold %d..%d partitions", g.topics[ti], lo, hi)
			}
		}
		if again := Range().Assign(withOwned(s, nil)); !equal(again, got) {
			t.Fatal("owned partitions changed range's assignment")
		}
	})
}
