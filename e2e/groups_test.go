package e2e

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// member is one franz-go group consumer running its poll loop in the
// background: it blocks rebalances while it holds a poll, commits what it
// processed before allowing the next one, and so can never have consumed a
// record it did not commit when a rebalance takes its partition away.
type member struct {
	name string
	cl   *kgo.Client

	mu       sync.Mutex
	assigned map[int32]bool
	got      []rec
	commitN  map[int32]int64 // commit only below this offset per partition (nil = commit all)

	stop chan struct{}
	done chan struct{}
}

type memberOpts struct {
	balancer  kgo.GroupBalancer
	commitMax map[int32]int64
	extra     []kgo.Opt
}

func startMember(t testing.TB, tg target, name, group, topic string, o memberOpts) *member {
	t.Helper()
	m := &member{name: name, assigned: map[int32]bool{}, commitN: o.commitMax, stop: make(chan struct{}), done: make(chan struct{})}
	const session = 6 * time.Second
	unassign := func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
		m.mu.Lock()
		for _, p := range a[topic] {
			delete(m.assigned, p)
		}
		m.mu.Unlock()
	}
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(session), kgo.HeartbeatInterval(session / 6),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			for _, p := range a[topic] {
				m.assigned[p] = true
			}
			m.mu.Unlock()
		}),
		kgo.OnPartitionsRevoked(unassign),
		kgo.OnPartitionsLost(unassign),
	}
	if o.balancer != nil {
		opts = append(opts, kgo.Balancers(o.balancer))
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt{kgo.SeedBrokers(tg.bootstrap...), kgo.FetchMaxWait(250 * time.Millisecond), kgo.MetadataMinAge(250 * time.Millisecond)}, opts...), o.extra...)...)
	if err != nil {
		t.Fatalf("member %s: %v", name, err)
	}
	m.cl = cl
	go m.loop(t)
	t.Cleanup(m.close)
	return m
}

func (m *member) loop(t testing.TB) {
	defer close(m.done)
	for {
		if closed(m.stop) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := m.cl.PollFetches(ctx)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		var commit []*kgo.Record
		m.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			m.got = append(m.got, fromKgo(r))
			if m.commitN == nil || r.Offset < m.commitN[r.Partition] {
				commit = append(commit, r)
			}
		})
		m.mu.Unlock()
		if len(commit) > 0 {
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := m.cl.CommitRecords(cctx, commit...); err != nil {
				t.Logf("member %s commit: %v", m.name, err)
			}
			ccancel()
		}
		m.cl.AllowRebalance()
	}
}

// close leaves the group (kgo sends LeaveGroup on Close).
func (m *member) close() {
	if closed(m.stop) {
		return
	}
	close(m.stop)
	m.cl.AllowRebalance()
	<-m.done
	m.cl.Close()
}

func (m *member) records() []rec {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]rec(nil), m.got...)
}

func (m *member) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.assigned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// waitStable waits until the coordinator reports group Stable with exactly
// n members whose assignments of topic are disjoint and cover 0..parts-1,
// and returns member id → partitions.
func waitStable(t testing.TB, tg target, group, topic string, n int, parts int32) map[string][]int32 {
	t.Helper()
	adm := newAdmin(t, tg.bootstrap)
	var out map[string][]int32
	eventually(t, 30*time.Second, fmt.Sprintf("group %s Stable with %d members covering %d partitions", group, n, parts), func() (bool, string) {
		dgs, err := adm.DescribeGroups(ctxT(t, 5*time.Second), group)
		if err != nil {
			return false, err.Error()
		}
		dg := dgs[group]
		if dg.Err != nil {
			return false, dg.Err.Error()
		}
		if dg.State != "Stable" || len(dg.Members) != n {
			return false, fmt.Sprintf("state %s, %d members", dg.State, len(dg.Members))
		}
		out = map[string][]int32{}
		owner := map[int32]string{}
		for _, mb := range dg.Members {
			ca, ok := mb.Assigned.AsConsumer()
			if !ok {
				return false, "assignment is not a consumer assignment"
			}
			for _, tp := range ca.Topics {
				if tp.Topic != topic {
					continue
				}
				for _, p := range tp.Partitions {
					if o, dup := owner[p]; dup {
						return false, fmt.Sprintf("partition %d assigned to %s and %s", p, o, mb.MemberID)
					}
					owner[p] = mb.MemberID
					out[mb.MemberID] = append(out[mb.MemberID], p)
				}
			}
		}
		if int32(len(owner)) != parts {
			return false, fmt.Sprintf("%d of %d partitions assigned: %v", len(owner), parts, out)
		}
		return true, ""
	})
	return out
}

// produceRound writes per records to every partition (manual partitioner)
// with values "<round>-<p>-<i>", starting at the offsets given; opts are
// the producer's extra options.
func produceRound(t testing.TB, tg target, topic string, parts int32, per int, round string, start int64, opts ...kgo.Opt) []rec {
	t.Helper()
	var rs []rec
	for i := 0; i < per; i++ {
		for p := int32(0); p < parts; p++ {
			rs = append(rs, rec{partition: p, offset: start + int64(i), key: []byte(strconv.Itoa(int(p))), value: []byte(fmt.Sprintf("%s-%d-%d", round, p, i))})
		}
	}
	produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), rs, opts...)
	return rs
}

// collect waits until the members together hold n records and returns
// them; more than n arriving within a short settle window is reported by
// the caller's exactness checks.
func collect(t testing.TB, n int, limit time.Duration, ms ...*member) []rec {
	t.Helper()
	var all []rec
	eventually(t, limit, fmt.Sprintf("%d records consumed", n), func() (bool, string) {
		all = nil
		for _, m := range ms {
			all = append(all, m.records()...)
		}
		return len(all) >= n, fmt.Sprintf("%d records", len(all))
	})
	time.Sleep(300 * time.Millisecond)
	all = nil
	for _, m := range ms {
		all = append(all, m.records()...)
	}
	return all
}

// exactlyOnce asserts got holds each record of want exactly once.
func exactlyOnce(t testing.TB, what string, want, got []rec) {
	t.Helper()
	seen := map[string]int{}
	for _, g := range got {
		seen[fmt.Sprintf("%d@%d=%s", g.partition, g.offset, g.value)]++
	}
	for _, w := range want {
		k := fmt.Sprintf("%d@%d=%s", w.partition, w.offset, w.value)
		if seen[k] != 1 {
			t.Errorf("%s: %s consumed %d times, want once", what, k, seen[k])
		}
		delete(seen, k)
	}
	for k, n := range seen {
		t.Errorf("%s: unexpected record %s consumed %d times", what, k, n)
	}
}

// assertCommitted checks the group's committed offsets for topic exactly.
func assertCommitted(t testing.TB, tg target, group, topic string, want map[int32]int64) {
	t.Helper()
	waitCommitted(t, tg, group, topic, want, 10*time.Second)
}

// waitCommitted waits up to limit for the group's committed offsets for
// topic to be exactly want.
func waitCommitted(t testing.TB, tg target, group, topic string, want map[int32]int64, limit time.Duration) {
	t.Helper()
	adm := newAdmin(t, tg.bootstrap)
	eventually(t, limit, "committed offsets "+fmt.Sprint(want), func() (bool, string) {
		os, err := adm.FetchOffsets(ctxT(t, 5*time.Second), group)
		if err != nil {
			return false, err.Error()
		}
		got := map[int32]int64{}
		os.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil && o.At >= 0 {
				got[o.Partition] = o.At
			}
		})
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("got %v", got)
	})
}

func fill(parts int32, v int64) map[int32]int64 {
	m := map[int32]int64{}
	for p := int32(0); p < parts; p++ {
		m[p] = v
	}
	return m
}

// testGroupBalancers: two franz-go members per balancer split the topic
// disjointly and covering, consume each record once, and commit.
func testGroupBalancers(t *testing.T, tg target) {
	for _, b := range []struct {
		name string
		bal  kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"roundrobin", kgo.RoundRobinBalancer()},
		{"sticky", kgo.StickyBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			const parts = 6
			topic, group := uniq("grp-"+b.name), uniq("g-"+b.name)
			createTopic(t, tg, topic, parts, nil)
			m1 := startMember(t, tg, "m1", group, topic, memberOpts{balancer: b.bal})
			m2 := startMember(t, tg, "m2", group, topic, memberOpts{balancer: b.bal})
			split := waitStable(t, tg, group, topic, 2, parts)
			for id, ps := range split {
				if len(ps) != 3 {
					t.Errorf("%s: member %s holds %v, want 3 of 6", b.name, id, ps)
				}
			}
			want := produceRound(t, tg, topic, parts, 5, "r1", 0)
			got := collect(t, len(want), 20*time.Second, m1, m2)
			exactlyOnce(t, b.name, want, got)
			// Each member read only what it was assigned.
			for _, m := range []*member{m1, m2} {
				mine := map[int32]bool{}
				for _, p := range m.partitions() {
					mine[p] = true
				}
				for _, r := range m.records() {
					if !mine[r.partition] {
						t.Errorf("%s: %s read partition %d outside its assignment %v", b.name, m.name, r.partition, m.partitions())
					}
				}
			}
			assertCommitted(t, tg, group, topic, fill(parts, 5))
		})
	}
}

// testGroupJoinLeave: a second member joining takes half the partitions, and
// leaving hands them back; nothing is lost or read twice across both
// rebalances.
func testGroupJoinLeave(t *testing.T, tg target) {
	for _, b := range []struct {
		name string
		bal  func() kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer},
		// Cooperative: partitions move in two rounds, and a member keeps
		// consuming what it keeps while the other round runs.
		{"cooperative-sticky", kgo.CooperativeStickyBalancer},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			groupJoinLeave(t, tg, b.bal)
		})
	}
}

func groupJoinLeave(t *testing.T, tg target, bal func() kgo.GroupBalancer) {
	const parts = 4
	topic, group := uniq("grp-jl"), uniq("g-jl")
	createTopic(t, tg, topic, parts, nil)
	m1 := startMember(t, tg, "m1", group, topic, memberOpts{balancer: bal()})
	waitStable(t, tg, group, topic, 1, parts)
	r1 := produceRound(t, tg, topic, parts, 5, "r1", 0)
	collect(t, len(r1), 20*time.Second, m1)
	assertCommitted(t, tg, group, topic, fill(parts, 5))

	m2 := startMember(t, tg, "m2", group, topic, memberOpts{balancer: bal()})
	split := waitStable(t, tg, group, topic, 2, parts)
	for id, ps := range split {
		if len(ps) != 2 {
			t.Errorf("after join: member %s holds %v, want 2 of 4", id, ps)
		}
	}
	r2 := produceRound(t, tg, topic, parts, 5, "r2", 5)
	collect(t, len(r1)+len(r2), 20*time.Second, m1, m2)
	if len(m2.records()) == 0 {
		t.Errorf("the joined member read nothing of round 2")
	}
	assertCommitted(t, tg, group, topic, fill(parts, 10))

	m2.close()
	waitStable(t, tg, group, topic, 1, parts)
	r3 := produceRound(t, tg, topic, parts, 5, "r3", 10)
	got := collect(t, len(r1)+len(r2)+len(r3), 20*time.Second, m1, m2)
	exactlyOnce(t, "join/leave", append(append(r1, r2...), r3...), got)
	assertCommitted(t, tg, group, topic, fill(parts, 15))
}

// testGroupEviction: a member that stops heartbeating without leaving (a
// kcat process killed with SIGKILL) is evicted after its session timeout
// and the survivor takes every partition.
func testGroupEviction(t *testing.T, tg target) {
	const parts = 4
	topic, group := uniq("grp-evict"), uniq("g-evict")
	createTopic(t, tg, topic, parts, nil)
	m1 := startMember(t, tg, "m1", group, topic, memberOpts{balancer: kgo.RangeBalancer()})
	waitStable(t, tg, group, topic, 1, parts)
	k := startKcat(t, "-b", tg.bootstrap[0], "-G", group, "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
		"-X", "partition.assignment.strategy=range", "-o", "beginning", "-q", "-u", "-f", "%p %o\n", topic)
	waitStable(t, tg, group, topic, 2, parts)
	killedAt := time.Now()
	k.kill()
	waitStable(t, tg, group, topic, 1, parts)
	took := time.Since(killedAt)
	// The group is stable at the coordinator a moment before the
	// survivor's client has run its assignment callback.
	for deadline := time.Now().Add(5 * time.Second); len(m1.partitions()) != parts && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if got := m1.partitions(); len(got) != parts {
		t.Errorf("survivor holds %v after the eviction, want all %d", got, parts)
	}
	t.Logf("silent member evicted and group re-formed %.1fs after SIGKILL (session timeout 6s)", took.Seconds())
	want := produceRound(t, tg, topic, parts, 3, "r1", 0)
	exactlyOnce(t, "after eviction", want, collect(t, len(want), 20*time.Second, m1))
}

// testGroupConsumerRestart: a consumer that read everything but committed
// only part leaves; its replacement resumes exactly at the committed
// offsets, re-reading only what was uncommitted and losing nothing.
func testGroupConsumerRestart(t *testing.T, tg target) {
	const parts = 3
	topic, group := uniq("grp-restart"), uniq("g-restart")
	createTopic(t, tg, topic, parts, nil)
	r1 := produceRound(t, tg, topic, parts, 10, "r1", 0)
	c1 := startMember(t, tg, "c1", group, topic, memberOpts{commitMax: fill(parts, 6)})
	exactlyOnce(t, "first consumer", r1, collect(t, len(r1), 20*time.Second, c1))
	assertCommitted(t, tg, group, topic, fill(parts, 6))
	c1.close()

	r2 := produceRound(t, tg, topic, parts, 3, "r2", 10)
	c2 := startMember(t, tg, "c2", group, topic, memberOpts{})
	var want []rec
	for _, r := range append(append([]rec{}, r1...), r2...) {
		if r.offset >= 6 {
			want = append(want, r)
		}
	}
	exactlyOnce(t, "restarted consumer (uncommitted 6..9 again, then 10..12)", want, collect(t, len(want), 20*time.Second, c2))
	assertCommitted(t, tg, group, topic, fill(parts, 13))
}

// testGroupAdmin: kadm list/describe/lag/delete-offsets/delete on a group
// with exact offsets and Kafka's refusals while the group is live.
func testGroupAdmin(t *testing.T, tg target) {
	const parts = 2
	topic, other, group := uniq("grp-adm"), uniq("grp-adm-other"), uniq("g-adm")
	createTopic(t, tg, topic, parts, nil)
	createTopic(t, tg, other, 1, nil)
	r1 := produceRound(t, tg, topic, parts, 10, "r1", 0)
	adm := newAdmin(t, tg.bootstrap)
	ctx := ctxT(t, 60*time.Second)
	// A simple (assign-style, generation -1) commit on another topic while
	// the group is still empty; once it has members Kafka refuses those
	// with UNKNOWN_MEMBER_ID, and so does the facade.
	if err := adm.CommitAllOffsets(ctx, group, kadm.Offsets{other: {0: {Topic: other, Partition: 0, At: 1, LeaderEpoch: -1}}}); err != nil {
		t.Errorf("simple commit on %s: %v", other, err)
	}
	m := startMember(t, tg, "m", group, topic, memberOpts{commitMax: fill(parts, 4)})
	collect(t, len(r1), 20*time.Second, m)
	assertCommitted(t, tg, group, topic, fill(parts, 4))
	if err := adm.CommitAllOffsets(ctx, group, kadm.Offsets{other: {0: {Topic: other, Partition: 0, At: 1, LeaderEpoch: -1}}}); !errors.Is(err, kerr.UnknownMemberID) {
		t.Errorf("simple commit to a live group: %v, want UNKNOWN_MEMBER_ID", err)
	}

	lgs, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	if lg, ok := lgs[group]; !ok || lg.State != "Stable" || lg.ProtocolType != "consumer" {
		t.Errorf("ListGroups: %s listed=%v %+v, want Stable consumer", group, ok, lg)
	}
	if lgs, err := adm.ListGroups(ctx, "Empty"); err != nil {
		t.Errorf("ListGroups(states=Empty): %v", err)
	} else if _, ok := lgs[group]; ok {
		t.Errorf("ListGroups(states=Empty) lists the Stable group %s", group)
	}
	dgs, err := adm.DescribeGroups(ctx, group)
	if err != nil || dgs[group].Err != nil {
		t.Fatalf("DescribeGroups: %v %v", err, dgs[group].Err)
	}
	if dg := dgs[group]; dg.ProtocolType != "consumer" || len(dg.Members) != 1 || dg.Protocol == "" {
		t.Errorf("DescribeGroups: %+v", dg)
	}

	lags, err := adm.Lag(ctx, group)
	if err != nil {
		t.Fatalf("Lag: %v", err)
	}
	lag := lags[group]
	for p := int32(0); p < parts; p++ {
		l, ok := lag.Lag.Lookup(topic, p)
		if !ok || l.Err != nil || l.Commit.At != 4 || l.End.Offset != 10 || l.Lag != 6 {
			t.Errorf("lag %s[%d]: found=%v %+v, want commit 4 end 10 lag 6", topic, p, ok, l)
		}
	}

	// Live group: refusals.
	if r, err := adm.DeleteGroups(ctx, group); err != nil || !errors.Is(r[group].Err, kerr.NonEmptyGroup) {
		t.Errorf("DeleteGroups on a live group: %v %v, want NON_EMPTY_GROUP", err, r[group].Err)
	}
	dres, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{topic: {0: {}}})
	if derr, found := dres.Lookup(topic, 0); err != nil || !found || !errors.Is(derr, kerr.GroupSubscribedToTopic) {
		t.Errorf("OffsetDelete of a subscribed topic: %v %v (found %v), want GROUP_SUBSCRIBED_TO_TOPIC", err, derr, found)
	}
	dres, err = adm.DeleteOffsets(ctx, group, kadm.TopicsSet{other: {0: {}}})
	if derr, found := dres.Lookup(other, 0); err != nil || !found || derr != nil {
		t.Errorf("OffsetDelete of an unsubscribed topic: %v %v (found %v)", err, derr, found)
	}
	if os, err := adm.FetchOffsets(ctx, group); err != nil {
		t.Errorf("FetchOffsets after OffsetDelete: %v", err)
	} else if o, ok := os.Lookup(other, 0); ok && o.At >= 0 {
		t.Errorf("offset of %s still committed after OffsetDelete: %+v", other, o)
	}

	m.close()
	eventually(t, 10*time.Second, "group Empty after its member left", func() (bool, string) {
		dgs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		return dgs[group].State == "Empty", dgs[group].State
	})
	assertCommitted(t, tg, group, topic, fill(parts, 4)) // survives the group going empty
	if r, err := adm.DeleteGroups(ctx, group); err != nil || r[group].Err != nil {
		t.Fatalf("DeleteGroups on an empty group: %v %v", err, r[group].Err)
	}
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets after delete: %v", err)
	}
	os.Each(func(o kadm.OffsetResponse) {
		if o.At >= 0 {
			t.Errorf("offset survived DeleteGroups: %+v", o)
		}
	})
	if lgs, err := adm.ListGroups(ctx); err != nil {
		t.Errorf("ListGroups after DeleteGroups: %v", err)
	} else if _, ok := lgs[group]; ok {
		t.Errorf("deleted group %s still listed", group)
	}
}

// closed reports whether c is closed, without waiting.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
