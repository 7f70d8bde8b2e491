package staticgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Member is a franz-go static member (kgo.InstanceID) whose assignment
// callbacks and group-session errors are recorded.
type Member struct {
	cl *kgo.Client

	mu       sync.Mutex
	assigned []int32
	assigns  int // OnPartitionsAssigned calls
	revokes  int // OnPartitionsRevoked and OnPartitionsLost calls
	errs     []error
}

// OnGroupManageError is kgo's HookGroupManageError.
func (s *Member) OnGroupManageError(err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
}

// Start starts instance's member of group consuming topic through seeds,
// with the range balancer (deterministic: franz-go orders static members
// by instance id) and versions capped at v (nil: franz-go's own).
func Start(t testing.TB, seeds []string, group, topic, instance string, v *kversion.Versions) *Member {
	t.Helper()
	s := &Member{}
	opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.InstanceID(instance), kgo.Balancers(kgo.RangeBalancer()),
		kgo.SessionTimeout(30 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond), kgo.DisableAutoCommit(),
		kgo.WithHooks(s),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			s.mu.Lock()
			s.assigned = slices.Sorted(slices.Values(a[topic]))
			s.assigns++
			s.mu.Unlock()
		}),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) { s.lost() }),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) { s.lost() }),
	}
	if v != nil {
		opts = append(opts, kgo.MaxVersions(v))
	}
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	s.cl = cl
	t.Cleanup(cl.Close)
	return s
}

func (s *Member) lost() {
	s.mu.Lock()
	s.assigned = nil
	s.revokes++
	s.mu.Unlock()
}

// State is what the member holds: its partitions, generation, and how
// many assignments and revocations it has seen.
func (s *Member) State() (parts []int32, gen int32, assigns, revokes int) {
	_, gen = s.cl.GroupMetadata()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.assigned), gen, s.assigns, s.revokes
}

// Fenced reports whether a group session of the member ended in
// FENCED_INSTANCE_ID.
func (s *Member) Fenced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, err := range s.errs {
		if errors.Is(err, kerr.FencedInstanceID) {
			return true
		}
	}
	return false
}

// WaitFormed waits until members hold disjoint assignments covering parts
// partitions, all in one generation, and returns it.
func WaitFormed(t testing.TB, members map[string]*Member, parts int) int32 {
	t.Helper()
	var gen int32
	require.Eventually(t, func() bool {
		seen := map[int32]bool{}
		gen = -2
		for _, m := range members {
			ps, g, _, _ := m.State()
			if len(ps) == 0 || (gen != -2 && g != gen) {
				return false
			}
			gen = g
			for _, p := range ps {
				if seen[p] {
					return false
				}
				seen[p] = true
			}
		}
		return len(seen) == parts
	}, 60*time.Second, 20*time.Millisecond, "group formed")
	return gen
}

// Run is the scenario on group over topic (parts partitions, existing).
// A rolling restart of all three members (each client closed without
// leaving, a new client with the same instance id) rebalances nothing:
// every restarted member is handed its old partitions in the same
// generation, and the members that did not restart see no revocation.
// Offsets committed by a restarted member are read back. A second live
// member with a running member's instance id fences it
// (FENCED_INSTANCE_ID) and takes over its partitions. DescribeGroups names
// every instance id.
func Run(t testing.TB, seeds []string, group, topic string, parts int, v *kversion.Versions) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	members := map[string]*Member{}
	for _, in := range []string{"i1", "i2", "i3"} {
		members[in] = Start(t, seeds, group, topic, in, v)
	}
	gen := WaitFormed(t, members, parts)

	for _, in := range []string{"i1", "i2", "i3"} {
		before := map[string][3]int{}
		for other, m := range members {
			_, g, a, r := m.State()
			before[other] = [3]int{int(g), a, r}
		}
		old, _, _, _ := members[in].State()
		members[in].cl.Close() // a static member does not leave
		nm := Start(t, seeds, group, topic, in, v)
		members[in] = nm
		require.Eventually(t, func() bool {
			ps, g, _, _ := nm.State()
			return g == gen && slices.Equal(ps, old)
		}, 30*time.Second, 20*time.Millisecond, "restarted %s handed %v in generation %d", in, old, gen)
		for other, m := range members {
			if other == in {
				continue
			}
			_, g, a, r := m.State()
			require.Equal(t, before[other], [3]int{int(g), a, r}, "%s must see no rebalance when %s restarts", other, in)
		}
	}

	admin := func() *kadm.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(seeds...)}
		if v != nil {
			opts = append(opts, kgo.MaxVersions(v))
		}
		cl, err := kgo.NewClient(opts...)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}

	// The restarted i2 commits; the offsets are read back.
	i2 := members["i2"]
	ps, _, _, _ := i2.State()
	offs := map[int32]kgo.EpochOffset{}
	for _, p := range ps {
		offs[p] = kgo.EpochOffset{Epoch: -1, Offset: int64(10 + p)}
	}
	var commitErr error
	i2.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: offs}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				commitErr = errors.Join(commitErr, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	})
	require.NoError(t, commitErr)
	fetched, err := admin().FetchOffsets(ctx, group)
	require.NoError(t, err)
	for _, p := range ps {
		o, ok := fetched.Lookup(topic, p)
		require.True(t, ok)
		require.Equal(t, int64(10+p), o.At)
	}

	// A second live i3: the running one is fenced, the newcomer takes its
	// partitions in the same generation.
	running := members["i3"]
	held, _, _, _ := running.State()
	dup := Start(t, seeds, group, topic, "i3", v)
	require.Eventually(t, running.Fenced, 30*time.Second, 20*time.Millisecond, "the replaced i3 is FENCED_INSTANCE_ID")
	running.cl.Close()
	require.Eventually(t, func() bool {
		ps, g, _, _ := dup.State()
		return g == gen && slices.Equal(ps, held)
	}, 30*time.Second, 20*time.Millisecond, "the duplicate i3 holds %v", held)

	dgs, err := admin().DescribeGroups(ctx, group)
	require.NoError(t, err)
	var inst []string
	for _, m := range dgs[group].Members {
		require.NotNil(t, m.InstanceID)
		inst = append(inst, *m.InstanceID)
	}
	slices.Sort(inst)
	require.Equal(t, []string{"i1", "i2", "i3"}, inst, fmt.Sprint(dgs[group].Members))
}
