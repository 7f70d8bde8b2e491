package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// consumerGroupEnv is the facade environment of the KIP-848 tests: members
// told to heartbeat every 500 ms (Kafka's default is 5 s), so that each
// step of a rebalance (revoke, acknowledge, assign) takes a heartbeat or
// two of the suite's time, not of production's.
var consumerGroupEnv = map[string]string{"QUEEN_KAFKA_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS": "500"}

// TestConsumerProtocolSixMembers (issue 21): six consumer-protocol members
// over 24 partitions under a steady producer; one member added, one
// removed, one static member restarted. Every acknowledged record is
// processed, duplicates only inside the at-least-once window (counted), the
// final committed offsets are the end offsets, committed offsets never go
// backwards, no partition is owned by two members at any instant (from the
// members' own callbacks), and the restarted static member gets its
// assignment back with no new group epoch. It logs each member's time from
// its join to its first assigned partition.
func TestConsumerProtocolSixMembers(t *testing.T) {
	t.Parallel()
	t.Run("single", func(t *testing.T) {
		dev := startQueenDev(t, devOptions{})
		fac := startFacade(t, dev, consumerGroupEnv)
		seeds := []string{fac.addr}
		sixMembers(t, seeds, func(topic string, parts int32) { createTopic(t, target{bootstrap: seeds}, topic, parts, nil) })
	})
	t.Run("cluster", func(t *testing.T) {
		c := newTestCluster(t, clusterOpts{nodes: 3, env: consumerGroupEnv})
		sixMembers(t, c.addrs(), func(topic string, parts int32) { c.createTopic(t, topic, parts) })
	})
}

const (
	changeParts = 24
	changeStep  = 60 * time.Second
)

func sixMembers(t *testing.T, seeds []string, create func(topic string, parts int32)) {
	topic, group := uniq("cg6"), uniq("cg6-group")
	create(topic, changeParts)
	require848(t, seeds)

	tl := newOwnership()
	defer tl.report(t)
	prod := startSteadyProducer(t, seeds, topic, changeParts, 2*time.Millisecond)
	mon := startCommitMonitor(t, seeds, group, topic)
	run := groupChange(t, seeds, protoConsumer, topic, group, tl)
	for _, l := range run.log {
		t.Log(l)
	}
	if !slices.Equal(run.staticGot, run.staticHeld) {
		t.Errorf("restarted static member owns %v, held %v before its restart", run.staticGot, run.staticHeld)
	}
	if run.epochs[0] != run.epochs[1] {
		t.Errorf("static restart moved the group epoch from %d to %d, want no new epoch", run.epochs[0], run.epochs[1])
	}

	acked := prod.finish(t)
	eventually(t, changeStep, "every acknowledged record processed", func() (bool, string) {
		n := 0
		for _, m := range run.all {
			n += len(m.records())
		}
		return n >= len(acked), fmt.Sprintf("%d of %d", n, len(acked))
	})
	checkFinalCommits(t, seeds, group, topic, changeParts, changeStep)
	for _, m := range run.live {
		m.close()
	}
	mon.finish()
	mon.report(t)
	v := checkDelivery(t, acked, run.all)

	var joins, errs []string
	for _, m := range run.all {
		joins = append(joins, fmt.Sprintf("%s %s", m.name, m.joinToAssigned().Round(time.Millisecond)))
		m.mu.Lock()
		if len(m.commitErrs) > 0 {
			errs = append(errs, fmt.Sprintf("%s: %d (first: %s)", m.name, len(m.commitErrs), m.commitErrs[0]))
		}
		m.mu.Unlock()
	}
	t.Logf("join to first assigned partition: %s", strings.Join(joins, ", "))
	// A failed commit's records are the duplicates' window. franz-go answers
	// REBALANCE_IN_PROGRESS itself for the partitions it drops from a commit
	// it retries after STALE_MEMBER_EPOCH (they were revoked meanwhile).
	t.Logf("%d records acknowledged, %d processed, %d duplicates (inside the at-least-once window), failed commits: %v", v.acked, v.consumed, v.duplicates, errs)
}

// changeRun is one run of groupChange.
type changeRun struct {
	all, live []*gm
	steady    [2]time.Time // steady consumption of the six, before the change
	change    [2]time.Time // the first step begun → balanced after the last
	// The static member's partitions before its restart and its
	// replacement's after; the group epoch before and after (consumer
	// protocol only).
	staticHeld, staticGot []int32
	epochs                [2]int32
	log                   []string
}

// groupChange is the six-member change of issue 21 with proto: six members
// (the sixth static) balanced over changeParts partitions, two seconds of
// steady consumption, then one member added, one removed and the static
// member restarted, each step waited out until the members' callbacks show
// an even covering assignment. The members stay running.
func groupChange(t testing.TB, seeds []string, proto groupProto, topic, group string, tl *ownership) *changeRun {
	t.Helper()
	r := &changeRun{}
	n := 0
	start := func(name, instance string) *gm {
		// Each member bootstraps at another node of a cluster.
		rot := append(slices.Clone(seeds[n%len(seeds):]), seeds[:n%len(seeds)]...)
		n++
		m := startGM(t, tl, rot, name, group, topic, gmOpts{proto: proto, instance: instance})
		r.all = append(r.all, m)
		r.live = append(r.live, m)
		return m
	}
	drop := func(m *gm) {
		m.close()
		r.live = slices.DeleteFunc(r.live, func(x *gm) bool { return x == m })
	}
	logf := func(format string, args ...any) { r.log = append(r.log, fmt.Sprintf(format, args...)) }
	epoch := func() int32 {
		if proto != protoConsumer {
			return 0
		}
		return describe848(t, seeds, group).Epoch
	}
	static := "static-" + group

	for i := 1; i <= 5; i++ {
		start(fmt.Sprintf("m%d", i), "")
	}
	s1 := start("s#1", static)
	tl.waitBalanced(t, changeParts, r.live, changeStep)
	if proto == protoConsumer {
		dg := describe848(t, seeds, group)
		if len(dg.Members) != 6 {
			t.Fatalf("ConsumerGroupDescribe: %d members, want 6", len(dg.Members))
		}
		logf("six members balanced: group epoch %d, assignment epoch %d, state %s, assignor %s", dg.Epoch, dg.AssignmentEpoch, dg.State, dg.AssignorName)
	}
	r.steady[0] = time.Now()
	time.Sleep(2 * time.Second)
	r.steady[1] = time.Now()

	r.change[0] = time.Now()
	added := start("m7", "")
	at := time.Now()
	tl.waitBalanced(t, changeParts, r.live, changeStep)
	logf("m7 added: balanced again after %s; m7's join to its first partition %s", time.Since(at).Round(time.Millisecond), added.joinToAssigned().Round(time.Millisecond))

	// A dynamic member's Close leaves the group.
	at = time.Now()
	drop(r.all[1])
	tl.waitBalanced(t, changeParts, r.live, changeStep)
	logf("m2 removed: balanced again after %s", time.Since(at).Round(time.Millisecond))

	// The static member leaves temporarily (epoch -2 in the consumer
	// protocol, see closeStatic; no LeaveGroup in the classic one) and a new
	// client with its instance id rejoins inside the session timeout.
	r.staticHeld = tl.held(s1.name)
	r.epochs[0] = epoch()
	at = time.Now()
	if proto == protoConsumer {
		s1.closeStatic(t, seeds, group, static)
		r.live = slices.DeleteFunc(r.live, func(x *gm) bool { return x == s1 })
	} else {
		drop(s1)
	}
	s2 := start("s#2", static)
	tl.waitBalanced(t, changeParts, r.live, changeStep)
	r.change[1] = time.Now()
	r.staticGot = tl.held(s2.name)
	r.epochs[1] = epoch()
	logf("static member restarted: balanced again after %s; its join to its first partition %s", time.Since(at).Round(time.Millisecond), s2.joinToAssigned().Round(time.Millisecond))
	return r
}
