package txn

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestV2NoLateRequestReachesTheNextTransaction drives one transactional id
// with random Produce v12 batches and EndTxn v5 decisions, a third of them
// late (an epoch already left behind), and checks after every step: the log
// holds exactly the records staged at the epochs whose commit was answered
// 0, in order; every decision moves to the next epoch; a request of an
// epoch left behind changes nothing (a retry of the last decision is
// answered what it granted, anything else is refused).
func TestV2NoLateRequestReachesTheNextTransaction(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			h := newHarness(t, Limits{})
			m := h.managerV2()
			rng := rand.New(rand.NewPCG(seed, 23))
			pid, epoch := h.init(m, h.cl, "prop")
			var (
				staged, log []string
				last        = 0 // 0 none, 1 committed, 2 aborted: the decision at epoch-1
				n           int
			)
			for step := range 300 {
				late := rng.IntN(3) == 0 && epoch > 0
				at := epoch
				if late {
					at = int16(rng.IntN(int(epoch)))
				}
				switch rng.IntN(3) {
				case 0, 1: // a batch
					v := fmt.Sprintf("v%d", n)
					n++
					code, _ := m.Produce(context.Background(), h.cl, implicit(batch("prop", pid, at, "out", 0, v, 1)))
					switch {
					case at == epoch && code != 0:
						t.Fatalf("step %d: a batch at the current epoch %d: %v", step, epoch, kerr.ErrorForCode(code))
					case at != epoch && code != kerr.ProducerFenced.Code:
						t.Fatalf("step %d: a batch at epoch %d of %d: %v", step, at, epoch, kerr.ErrorForCode(code))
					case code == 0:
						staged = append(staged, v+"-0")
					}
				default: // a decision
					commit := rng.IntN(2) == 0
					r := endV5(m, h.cl, "prop", pid, at, commit)
					// A retry of the last decision, while no next transaction is open.
					retry := at == epoch-1 && last != 0 && len(staged) == 0
					switch {
					case retry && (last == 1) == commit:
						if r.ErrorCode != 0 || r.ProducerEpoch != epoch {
							t.Fatalf("step %d: a retried decision: %v epoch %d, want 0 and %d", step, kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch, epoch)
						}
					case retry:
						if r.ErrorCode != kerr.InvalidTxnState.Code {
							t.Fatalf("step %d: the other decision's retry: %v", step, kerr.ErrorForCode(r.ErrorCode))
						}
					case at != epoch:
						if r.ErrorCode != kerr.ProducerFenced.Code {
							t.Fatalf("step %d: a late decision at %d of %d: %v", step, at, epoch, kerr.ErrorForCode(r.ErrorCode))
						}
					case commit && len(staged) == 0:
						if r.ErrorCode != kerr.InvalidTxnState.Code {
							t.Fatalf("step %d: a commit of nothing: %v", step, kerr.ErrorForCode(r.ErrorCode))
						}
					default:
						if r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != epoch+1 {
							t.Fatalf("step %d: decision at %d: %v %d/%d", step, epoch, kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
						}
						if commit {
							log = append(log, staged...)
							last = 1
						} else {
							last = 2
						}
						staged, epoch = nil, epoch+1
					}
				}
				if got, _ := h.values("out", 0); !slices.Equal(got, log) {
					t.Fatalf("step %d: the log holds %v, want %v", step, got, log)
				}
			}
			if epoch < 5 {
				t.Fatalf("only %d decisions in 300 steps", epoch)
			}
		})
	}
}
