//go:build chaos || soak

package e2e

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The workload the chaos test (chaos_test.go) and the soak (soak_test.go)
// share: the producers' acknowledgements, the group's polls, a group
// member and the committed-offset watcher. Their checker,
// chaos_check_test.go, is untagged.

// acks collects every producer's acknowledgements and errors.
type acks struct {
	mu     sync.Mutex
	recs   []ack
	errs   map[string]int // non-fatal errors by client
	fatals []string
}

func (a *acks) ok(id string, p int32, off int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs = append(a.recs, ack{id, p, off})
}

func (a *acks) failed(client string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.errs == nil {
		a.errs = map[string]int{}
	}
	a.errs[client]++
}

func (a *acks) fatal(what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fatals = append(a.fatals, what)
}

// chaosID is the unique id of a producer's i-th record.
func chaosID(client string, i int) string { return client + "-" + strconv.Itoa(i) }

// polls is every record the group was given, in each member's order.
type polls struct {
	mu      sync.Mutex
	recs    []poll
	seen    map[string]int
	errs    int
	commits int // failed commits
}

func (p *polls) add(r poll) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recs = append(p.recs, r)
	p.seen[r.id]++
}

func (p *polls) covers(ids map[string]bool) (bool, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	missing := 0
	for id := range ids {
		if p.seen[id] == 0 {
			missing++
		}
	}
	return missing == 0, missing
}

// consumeGroupChaos runs group member m until done: it polls, records what
// it was given in its current generation, commits and lets a rebalance
// through only between polls (so a generation's records are one stream).
// Its client is returned for a caller that stops the member before the
// test ends (the soak's restarting member).
func consumeGroupChaos(t *testing.T, seeds []string, topic, group string, m int, done <-chan struct{}, wg *sync.WaitGroup, ps *polls) *kgo.Client {
	var gen atomic.Int64
	bump := func(context.Context, *kgo.Client, map[string][]int32) { gen.Add(1) }
	cl := newKgo(t, seeds, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("chaos-member-"+strconv.Itoa(m)),
		kgo.OnPartitionsAssigned(bump), kgo.OnPartitionsLost(bump),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := cl.CommitUncommittedOffsets(cctx); err != nil {
				ps.mu.Lock()
				ps.commits++
				ps.mu.Unlock()
			}
			gen.Add(1)
		}))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-done; cancel() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 500)
			g := int(gen.Load())
			fs.EachError(func(string, int32, error) {
				ps.mu.Lock()
				ps.errs++
				ps.mu.Unlock()
			})
			fs.EachRecord(func(r *kgo.Record) {
				ps.add(poll{member: m, gen: g, partition: r.Partition, offset: r.Offset, id: string(r.Value)})
			})
			cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
			if err := cl.CommitUncommittedOffsets(cctx); err != nil && ctx.Err() == nil {
				ps.mu.Lock()
				ps.commits++
				ps.mu.Unlock()
			}
			ccancel()
			cl.AllowRebalance()
		}
	}()
	return cl
}

// watchCommits polls the group's committed offsets with OffsetFetch, each
// poll at the next node in turn, and counts every partition whose committed
// offset is ever below one seen before. The returned func stops it.
func watchCommits(t *testing.T, c *testCluster, group, topic string, parts int32) (*atomic.Int64, func()) {
	var regressions atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	high := map[int32]int64{}
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			id := 1 + i%len(c.nodes)
			got, err := c.offsetsAt(t, id, group, topic, parts)
			if err != nil {
				continue // the node or queen-dev is down
			}
			for p, off := range got {
				if off < high[p] {
					if regressions.Add(1) <= 5 {
						t.Logf("committed offset of partition %d went back from %d to %d (OffsetFetch at node %d)", p, high[p], off, id)
					}
					continue
				}
				high[p] = off
			}
		}
	}()
	return &regressions, func() { close(done); <-stopped }
}
