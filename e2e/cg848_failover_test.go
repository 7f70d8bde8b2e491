package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConsumerProtocolCoordinatorKilled (issue 21): the coordinator of a
// consumer-protocol group, found with FindCoordinator, is SIGKILLed in a
// 3-node cluster under a steady producer. The group goes on at the new
// owner without a full reassignment: Kafka persists the group epoch, the
// target assignment and the member epochs, so the members keep their
// partitions. Checked: no member sees OnPartitionsLost (it would be fenced
// or unknown at the new owner), the group epoch does not go back, the same
// member ids are in the group, and the number of partitions that changed
// owner across the kill is logged and must be at most a quarter of them;
// committed offsets (sampled at a survivor, node 1, every 200 ms) never go backwards;
// every acknowledged record is processed and the final commits are the end
// offsets.
func TestConsumerProtocolCoordinatorKilled(t *testing.T) {
	t.Parallel()
	const (
		parts   = 12
		members = 4
		step    = 60 * time.Second
	)
	c := newTestCluster(t, clusterOpts{nodes: 3, env: consumerGroupEnv})
	topic := uniq("cgkill")
	c.createTopic(t, topic, parts)
	// A group node 3 owns, so the members and the producer can use the
	// survivors' addresses from the start; FindCoordinator must agree.
	group := ownedGroup(t, []int32{1, 2, 3}, 3)
	survivors := c.addrs(1, 2)
	require848(t, c.addrs())

	tl := newOwnership()
	defer tl.report(t)
	prod := startSteadyProducer(t, survivors, topic, parts, 5*time.Millisecond)
	// Committed offsets as node 1 answers OffsetFetch (every node does):
	// a client of the coordinator would lose its samples with it.
	mon := startCommitMonitorWith(t, func(context.Context) (map[int32]int64, error) { return c.offsetsAt(t, 1, group, topic, parts) })
	var ms []*gm
	for i := range members {
		ms = append(ms, startGM(t, tl, []string{survivors[i%2], survivors[(i+1)%2]}, fmt.Sprintf("m%d", i+1), group, topic, gmOpts{proto: protoConsumer}))
	}
	tl.waitBalanced(t, parts, ms, step)
	eventually(t, step, "every partition committed before the kill", func() (bool, string) {
		n := len(mon.committed())
		return n == parts, fmt.Sprintf("%d of %d", n, parts)
	})
	fc, err := c.findCoordinator(t, 1, group)
	if err != nil || fc.ErrorCode != 0 {
		t.Fatalf("FindCoordinator %s: %v, error %d", group, err, fc.ErrorCode)
	}
	coord := int(fc.NodeID)
	if coord < 1 || coord > 3 || slices.Contains(survivors, c.node(coord).addr) {
		t.Fatalf("FindCoordinator names node %d, want the group's rendezvous owner, node 3", coord)
	}
	before := tl.snapshot()
	dg := describe848(t, survivors, group)
	var ids []string
	for _, m := range dg.Members {
		ids = append(ids, m.MemberID)
	}
	slices.Sort(ids)
	t.Logf("before the kill: coordinator node %d, group epoch %d, assignment epoch %d, %d members", coord, dg.Epoch, dg.AssignmentEpoch, len(ids))

	atKill := mon.committed()
	c.node(coord).kill()
	killed := time.Now()
	var newOwner int32
	eventually(t, step, "the survivors agreeing on a new coordinator", func() (bool, string) {
		newOwner = c.agreedOwner(t, group, 1, 2)
		return newOwner != 0 && int(newOwner) != coord, fmt.Sprintf("agreed on %d", newOwner)
	})
	agreed := time.Since(killed)
	eventually(t, step, "every partition committed past its offset at the kill", func() (bool, string) {
		now, behind := mon.committed(), 0
		for p := range int32(parts) {
			if now[p] <= atKill[p] {
				behind++
			}
		}
		return behind == 0, fmt.Sprintf("%d partitions not yet (committed %v, at the kill %v; members: %s)", behind, now, atKill, memberStatus(ms))
	})
	resumed := time.Since(killed)
	tl.waitBalanced(t, parts, ms, step)
	// A few heartbeats at the new owner, for a reassignment to show.
	time.Sleep(3 * time.Second)
	tl.waitBalanced(t, parts, ms, step)
	after := tl.snapshot()
	moved := 0
	for p := range int32(parts) {
		if before[p] != after[p] {
			moved++
		}
	}
	dg2 := describe848(t, survivors, group)
	var ids2 []string
	for _, m := range dg2.Members {
		ids2 = append(ids2, m.MemberID)
	}
	slices.Sort(ids2)
	t.Logf("after the kill: node %d coordinates (agreed %s after the kill, every partition committing %s after), group epoch %d, assignment epoch %d; %d of %d partitions changed owner",
		newOwner, agreed.Round(time.Millisecond), resumed.Round(time.Millisecond), dg2.Epoch, dg2.AssignmentEpoch, moved, parts)
	if dg2.Epoch < dg.Epoch {
		t.Errorf("group epoch went back from %d to %d: the new coordinator did not load the group", dg.Epoch, dg2.Epoch)
	}
	if !slices.Equal(ids, ids2) {
		t.Errorf("member ids changed across the kill: %v, then %v", ids, ids2)
	}
	if moved > parts/4 {
		t.Errorf("%d of %d partitions changed owner across the coordinator's kill: a reassignment, not the persisted target assignment", moved, parts)
	}

	acked := prod.finish(t)
	checkFinalCommits(t, survivors, group, topic, parts, step)
	for _, m := range ms {
		m.close()
	}
	mon.finish()
	mon.report(t)
	v := checkDelivery(t, acked, ms)
	t.Logf("%d records acknowledged, %d processed, %d duplicates (inside the at-least-once window)", v.acked, v.consumed, v.duplicates)
}

// memberStatus is each member's records processed and failed commits, for
// a failure message.
func memberStatus(ms []*gm) string {
	var out []string
	for _, m := range ms {
		m.mu.Lock()
		last := ""
		if n := len(m.commitErrs); n > 0 {
			last = m.commitErrs[n-1]
		}
		out = append(out, fmt.Sprintf("%s %d records, %d failed commits %q", m.name, len(m.got), len(m.commitErrs), last))
		m.mu.Unlock()
	}
	return strings.Join(out, "; ")
}
