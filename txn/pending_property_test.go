package txn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/queen-mq/queen-kafka/coordinator"
)

// TestPendingIndexIsTheOpenTransactionsOffsets drives single mode's
// pending index as the manager does (an offset key enters once per
// transaction at TxnOffsetCommit, every key of a transaction leaves when it
// ends) with random transactions of two identities over overlapping
// groups and partitions, and checks after every step that each group's
// answer is exactly the partitions some open transaction of that identity
// staged: two transactions holding one partition keep it unstable until
// both end.
func TestPendingIndexIsTheOpenTransactionsOffsets(t *testing.T) {
	groups, topics := []string{"g1", "g:2"}, []string{"a", "b"}
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 447))
			m := &Manager{}
			type txnModel struct {
				identity string
				keys     map[string]bool
			}
			open := map[int]*txnModel{}
			for step := range 400 {
				id := rng.IntN(6)
				switch {
				case open[id] == nil || rng.IntN(3) > 0:
					if open[id] == nil {
						open[id] = &txnModel{identity: []string{"", "tenant"}[id%2], keys: map[string]bool{}}
					}
					tx := open[id]
					g, tp, p := groups[rng.IntN(2)], topics[rng.IntN(2)], int32(rng.IntN(3))
					key, code := coordinator.OffsetKey(g, tp, p)
					if code != 0 {
						t.Fatalf("offset key of %s %s %d: %d", g, tp, p, code)
					}
					if !tx.keys[key] {
						tx.keys[key] = true
						m.pending.add(tx.identity, g, tp, p)
					}
				default:
					m.pending.drop(open[id].identity, open[id].keys)
					delete(open, id)
				}
				for _, identity := range []string{"", "tenant"} {
					for _, g := range groups {
						want := map[coordinator.TopicPartition]bool{}
						for _, tx := range open {
							if tx.identity != identity {
								continue
							}
							for _, tp := range topics {
								for p := range int32(3) {
									if k, _ := coordinator.OffsetKey(g, tp, p); tx.keys[k] {
										want[coordinator.TopicPartition{Topic: tp, Partition: p}] = true
									}
								}
							}
						}
						got, err := m.PendingOffsets(context.Background(), identity, nil, g)
						if err != nil {
							t.Fatal(err)
						}
						if len(got) != len(want) {
							t.Fatalf("step %d, %q %s: pending %v, open transactions hold %v", step, identity, g, got, want)
						}
						for tp := range want {
							if !got[tp] {
								t.Fatalf("step %d, %q %s: pending %v, open transactions hold %v", step, identity, g, got, want)
							}
						}
					}
				}
			}
			for id, tx := range open {
				m.pending.drop(tx.identity, tx.keys)
				delete(open, id)
			}
			if len(m.pending.groups) != 0 {
				t.Fatalf("every transaction ended, the index holds %v", m.pending.groups)
			}
		})
	}
}
