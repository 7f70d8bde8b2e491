package assignor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchSpec is a group of 1,000 members over 10 topics of 1,000 partitions
// (10,000 partitions): every member subscribed to every topic, or (mixed) to
// a random half of them.
func benchSpec(mixed bool) Spec {
	rng := rand.New(rand.NewPCG(1, 1000))
	s := Spec{Partitions: map[string]int32{}}
	var topics []string
	for i := range 10 {
		t := fmt.Sprintf("topic-%02d", i)
		topics = append(topics, t)
		s.Partitions[t] = 1000
	}
	for i := range 1000 {
		m := Member{ID: fmt.Sprintf("member-%04d", i)}
		for _, t := range topics {
			if !mixed || rng.IntN(2) == 0 {
				m.Topics = append(m.Topics, t)
			}
		}
		if len(m.Topics) == 0 {
			m.Topics = topics[:1]
		}
		s.Members = append(s.Members, m)
	}
	return s
}

// BenchmarkAssign: 1,000 members × 10,000 partitions. fresh: nobody owns
// anything (a new group); steady: everyone owns what the last assignment
// gave them (a recompute that changes nothing); join: one more member
// joins a steady group.
func BenchmarkAssign(b *testing.B) {
	for _, c := range []struct {
		name  string
		a     Assignor
		mixed bool
	}{
		{"uniform-homogeneous", Uniform(), false},
		{"uniform-heterogeneous", Uniform(), true},
		{"range-homogeneous", Range(), false},
		{"range-heterogeneous", Range(), true},
	} {
		fresh := benchSpec(c.mixed)
		steady := withOwned(fresh, c.a.Assign(fresh))
		join := steady
		join.Members = append(append([]Member(nil), steady.Members...), Member{ID: "member-0500+", Topics: steady.Members[0].Topics})
		for _, s := range []struct {
			name string
			spec Spec
		}{{"fresh", fresh}, {"steady", steady}, {"join", join}} {
			b.Run(c.name+"/"+s.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c.a.Assign(s.spec)
				}
			})
		}
	}
}
