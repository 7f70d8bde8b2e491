package assignor

import (
	"reflect"
	"slices"
	"testing"
)

// The scenarios of Kafka's RangeAssignorTest (the server-side one), in our
// words; range's layout does not depend on iteration order, so these are
// Kafka's expectations.
func TestRangeScenarios(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		want Assignment
	}{
		{
			name: "one member subscribed to nothing gets nothing",
			spec: Spec{Members: []Member{{ID: "A"}}, Partitions: map[string]int32{"t1": 3}},
			want: Assignment{"A": {}},
		},
		{
			name: "a subscription to a topic that does not exist is ignored",
			spec: Spec{Members: []Member{{ID: "A", Topics: []string{"gone", "t1"}}}, Partitions: map[string]int32{"t1": 2}},
			want: Assignment{"A": {"t1": {0, 1}}},
		},
		{
			// The co-partitioning example of Kafka's javadoc: the same
			// partition numbers of both topics go to the same member.
			name: "same subscriptions, co-partitioned topics",
			spec: Spec{
				Members:    []Member{{ID: "M1", Topics: []string{"T2", "T1"}}, {ID: "M0", Topics: []string{"T1", "T2"}}},
				Partitions: map[string]int32{"T1": 3, "T2": 3},
			},
			want: Assignment{"M0": {"T1": {0, 1}, "T2": {0, 1}}, "M1": {"T1": {2}, "T2": {2}}},
		},
		{
			name: "same subscriptions, topics of different sizes",
			spec: Spec{
				Members:    []Member{{ID: "A", Topics: []string{"t1", "t3"}}, {ID: "B", Topics: []string{"t1", "t3"}}},
				Partitions: map[string]int32{"t1": 3, "t3": 2},
			},
			want: Assignment{"A": {"t1": {0, 1}, "t3": {0}}, "B": {"t1": {2}, "t3": {1}}},
		},
		{
			name: "different subscriptions: each topic ranged over its own subscribers",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t2"}},
					{ID: "B", Topics: []string{"t3"}},
					{ID: "C", Topics: []string{"t2", "t3"}},
				},
				Partitions: map[string]int32{"t1": 3, "t2": 3, "t3": 2},
			},
			want: Assignment{
				"A": {"t1": {0, 1, 2}, "t2": {0, 1}},
				"B": {"t3": {0}},
				"C": {"t2": {2}, "t3": {1}},
			},
		},
		{
			name: "more members than partitions: the first in order get one each",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t3"}},
					{ID: "B", Topics: []string{"t1", "t3"}},
					{ID: "C", Topics: []string{"t1", "t3"}},
				},
				Partitions: map[string]int32{"t1": 3, "t3": 2},
			},
			want: Assignment{"A": {"t1": {0}, "t3": {0}}, "B": {"t1": {1}, "t3": {1}}, "C": {"t1": {2}}},
		},
		{
			// Kafka 4's range recomputes from the member order (KAFKA-16944):
			// a member's current assignment is not kept. C's joining shifts
			// the ranges even though A and B owned theirs.
			name: "owned partitions are not kept: the order decides",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1"}, Owned: topics{"t1": {3, 4, 5}}},
					{ID: "B", Topics: []string{"t1"}, Owned: topics{"t1": {0, 1, 2}}},
					{ID: "C", Topics: []string{"t1"}},
				},
				Partitions: map[string]int32{"t1": 6},
			},
			want: Assignment{"A": {"t1": {0, 1}}, "B": {"t1": {2, 3}}, "C": {"t1": {4, 5}}},
		},
		{
			// Static members come first, by instance id, then dynamic ones
			// by member id: a static member that rejoins under a new member
			// id keeps its ranges (Kafka's javadoc example, I0 and I1).
			name: "static members ordered by instance id, before dynamic members",
			spec: Spec{
				Members: []Member{
					{ID: "a-dynamic", Topics: []string{"t1", "t2"}},
					{ID: "m3", InstanceID: "I0", Topics: []string{"t1", "t2"}},
					{ID: "m2", InstanceID: "I1", Topics: []string{"t1", "t2"}},
				},
				Partitions: map[string]int32{"t1": 4, "t2": 4},
			},
			want: Assignment{
				"m3":        {"t1": {0, 1}, "t2": {0, 1}},
				"m2":        {"t1": {2}, "t2": {2}},
				"a-dynamic": {"t1": {3}, "t2": {3}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Range().Assign(tc.spec)
			if err := validate(tc.spec, got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestByName(t *testing.T) {
	for _, name := range []string{"uniform", "range"} {
		a, ok := ByName(name)
		if !ok || a.Name() != name {
			t.Errorf("ByName(%q) = %v, %v", name, a, ok)
		}
	}
	if _, ok := ByName("sticky"); ok {
		t.Error("ByName(sticky) offered an assignor this broker does not have")
	}
	if a, ok := ByName(Default); !ok || a.Name() != "uniform" {
		t.Errorf("Default %q is not uniform", Default)
	}
}

// The partition lists share a backing array: appending to one must not
// write into another member's.
func TestAssignmentListsIndependent(t *testing.T) {
	s := Spec{
		Members:    []Member{{ID: "A", Topics: []string{"t"}}, {ID: "B", Topics: []string{"t"}}},
		Partitions: map[string]int32{"t": 4},
	}
	for _, a := range []Assignor{Uniform(), Range()} {
		got := a.Assign(s)
		b := slices.Clone(got["B"]["t"])
		_ = append(got["A"]["t"], 99)
		if !slices.Equal(got["B"]["t"], b) {
			t.Fatalf("%s: appending to A's list changed B's: %v", a.Name(), got["B"]["t"])
		}
	}
}
