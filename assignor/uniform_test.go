package assignor

import (
	"reflect"
	"testing"
)

type topics = map[string][]int32

// The scenarios of Kafka's UniformHomogeneousAssignmentBuilderTest and
// UniformHeterogeneousAssignmentBuilderTest, in our words. Where Kafka's
// expected layout depends on its hash iteration order, the expectation here
// is the one our canonical order (members by id, topics by name) gives,
// with the rule that decides it stated.
func TestUniformScenarios(t *testing.T) {
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
			// Kafka throws; a Spec's subscriptions may lag the catalogue,
			// so here the missing topic is ignored.
			name: "a subscription to a topic that does not exist is ignored",
			spec: Spec{Members: []Member{{ID: "A", Topics: []string{"gone"}}}, Partitions: map[string]int32{"t1": 3}},
			want: Assignment{"A": {}},
		},
		{
			// 5 partitions over 2 members: 3 and 2. The extra quota goes to
			// the first member by id (none owns anything); each member
			// takes a contiguous run of the unowned partitions in order.
			name: "first assignment, two members, two topics",
			spec: Spec{
				Members:    []Member{{ID: "B", Topics: []string{"t3", "t1"}}, {ID: "A", Topics: []string{"t1", "t3"}}},
				Partitions: map[string]int32{"t1": 3, "t3": 2},
			},
			want: Assignment{"A": {"t1": {0, 1, 2}}, "B": {"t3": {0, 1}}},
		},
		{
			name: "more members than partitions: one each, the last by id idle",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t2"}}, {ID: "B", Topics: []string{"t1", "t2"}},
					{ID: "C", Topics: []string{"t1", "t2"}}, {ID: "D", Topics: []string{"t1", "t2"}},
				},
				Partitions: map[string]int32{"t1": 2, "t2": 1},
			},
			want: Assignment{"A": {"t1": {0}}, "B": {"t1": {1}}, "C": {"t2": {0}}, "D": {}},
		},
		{
			// B owns 4 of 6: it keeps its quota of 3 (its lowest: t1-2,
			// t2-0, t2-1) and t2-2 is the one partition that moves.
			name: "unbalanced previous assignment: the fewest moves to balance",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {0, 1}}},
					{ID: "B", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {2}, "t2": {0, 1, 2}}},
				},
				Partitions: map[string]int32{"t1": 3, "t2": 3},
			},
			want: Assignment{"A": {"t1": {0, 1}, "t2": {2}}, "B": {"t1": {2}, "t2": {0, 1}}},
		},
		{
			// t1 grows 3→6 and t2 3→5: nobody loses a partition, the 5 new
			// ones fill both members to 6+5=11 → 6 and 5.
			name: "partitions added: members keep theirs and share the new ones",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {0, 2}, "t2": {1}}},
					{ID: "B", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {1}, "t2": {0, 2}}},
				},
				Partitions: map[string]int32{"t1": 6, "t2": 5},
			},
			want: Assignment{
				"A": {"t1": {0, 2, 3, 4, 5}, "t2": {1}},
				"B": {"t1": {1}, "t2": {0, 2, 3, 4}},
			},
		},
		{
			// 6 partitions, 3 and 3; C joins: quotas 2 each, A and B each
			// give up their highest, C gets exactly those two.
			name: "member added: only the newcomer's share moves",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {0, 2}, "t2": {1}}},
					{ID: "B", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {1}, "t2": {0, 2}}},
					{ID: "C", Topics: []string{"t1", "t2"}},
				},
				Partitions: map[string]int32{"t1": 3, "t2": 3},
			},
			want: Assignment{
				"A": {"t1": {0, 2}},
				"B": {"t1": {1}, "t2": {0}},
				"C": {"t2": {1, 2}},
			},
		},
		{
			// A, B, C held 2 each; C leaves: A and B keep theirs and
			// take C's, one each.
			name: "member removed: only its partitions move",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {0}, "t2": {0}}},
					{ID: "B", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {1}, "t2": {1}}},
				},
				Partitions: map[string]int32{"t1": 3, "t2": 3},
			},
			want: Assignment{"A": {"t1": {0, 2}, "t2": {0}}, "B": {"t1": {1}, "t2": {1, 2}}},
		},
		{
			// Both drop t1: its partitions go; t2's stay where they were,
			// then balance (A 1, B 2 of t2's 3).
			name: "subscription removed: the topic's partitions are revoked",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t2"}, Owned: topics{"t1": {0, 1}, "t2": {0}}},
					{ID: "B", Topics: []string{"t2"}, Owned: topics{"t1": {2}, "t2": {1, 2}}},
				},
				Partitions: map[string]int32{"t1": 3, "t2": 3},
			},
			want: Assignment{"A": {"t2": {0}}, "B": {"t2": {1, 2}}},
		},
		{
			// Heterogeneous. Topics by partitions per subscriber: t1 (3/1)
			// all to A; t2 (3/2) to its least loaded subscriber, C, which
			// then ties A at 3; t3 (2/2) to B, the least loaded. 3, 2, 3:
			// no subscriber of any topic is two above another.
			name: "heterogeneous first assignment, three members, three topics",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t2"}},
					{ID: "B", Topics: []string{"t3"}},
					{ID: "C", Topics: []string{"t2", "t3"}},
				},
				Partitions: map[string]int32{"t1": 3, "t2": 3, "t3": 2},
			},
			want: Assignment{"A": {"t1": {0, 1, 2}}, "B": {"t3": {0, 1}}, "C": {"t2": {0, 1, 2}}},
		},
		{
			// B newly subscribes to t1 only; A owned everything (6). The
			// balancing moves A's t1 partitions, highest first, while A
			// is two above B: both go, and A (4, all of t2) holding no t1
			// partition is as balanced as B's subscription allows.
			name: "heterogeneous: a new member takes only what its topics allow",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {0, 1}, "t2": {0, 1, 2, 3}}},
					{ID: "B", Topics: []string{"t1"}},
				},
				Partitions: map[string]int32{"t1": 2, "t2": 4},
			},
			want: Assignment{"A": {"t2": {0, 1, 2, 3}}, "B": {"t1": {0, 1}}},
		},
		{
			// A, B subscribe to t1, t2; C to t2 only and joins. C can only
			// take t2's partitions; 9 over three, 3 each.
			name: "heterogeneous: member added with a narrower subscription",
			spec: Spec{
				Members: []Member{
					{ID: "A", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {0, 1}, "t2": {0, 1, 2}}},
					{ID: "B", Topics: []string{"t1", "t2"}, Owned: topics{"t1": {2, 3}, "t2": {3, 4}}},
					{ID: "C", Topics: []string{"t2"}},
				},
				Partitions: map[string]int32{"t1": 4, "t2": 5},
			},
			want: Assignment{
				"A": {"t1": {0, 1}, "t2": {0}},
				"B": {"t1": {2, 3}, "t2": {3}},
				"C": {"t2": {1, 2, 4}},
			},
		},
		{
			// The example in Kafka's balanceTopics javadoc: M1 subscribes
			// to t1, M2 to both, M3 to t2 and owns all of t2. t1 is dealt
			// alternately to M1 and M2 (8, 7); balancing t2 moves M3's
			// highest four to M2 (11, 11); balancing t1 again moves one of
			// M2's to M1. 9, 10, 11: every topic's subscribers are within
			// one, which is Kafka's condition, though 10, 10, 10 exists.
			name: "heterogeneous: overlapping subscriptions end nearly balanced, as in Kafka",
			spec: Spec{
				Members: []Member{
					{ID: "M1", Topics: []string{"t1"}},
					{ID: "M2", Topics: []string{"t1", "t2"}},
					{ID: "M3", Topics: []string{"t2"}, Owned: topics{"t2": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}}},
				},
				Partitions: map[string]int32{"t1": 15, "t2": 15},
			},
			want: Assignment{
				"M1": {"t1": {0, 2, 4, 6, 8, 10, 12, 13, 14}},
				"M2": {"t1": {1, 3, 5, 7, 9, 11}, "t2": {11, 12, 13, 14}},
				"M3": {"t2": {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, converged := assignUniform(tc.spec)
			if err := validate(tc.spec, got); err != nil {
				t.Fatal(err)
			}
			if !converged {
				t.Fatal("balancing did not converge")
			}
			if err := heterogeneousBalanced(tc.spec, got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}
