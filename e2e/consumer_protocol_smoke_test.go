package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerProtocolSmoke runs two franz-go consumers with KIP-848's
// consumer protocol (kgo.ServerSideBalancer) against one facade: every
// record is consumed once, the group is a consumer-protocol group
// (ConsumerGroupDescribe names both members) and the partitions are split
// between them.
func TestConsumerProtocolSmoke(t *testing.T) {
	dev, fac := sharedEnv(t)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	const parts = 6
	topic, group := uniq("cp-smoke"), uniq("g-cp-smoke")
	createTopic(t, tg, topic, parts, nil)
	opts := memberOpts{balancer: kgo.RangeBalancer(), extra: []kgo.Opt{kgo.ServerSideBalancer()}}
	m1 := startMember(t, tg, "m1", group, topic, opts)
	m2 := startMember(t, tg, "m2", group, topic, opts)
	want := produceRound(t, tg, topic, parts, 10, "r1", 0)
	got := collect(t, len(want), 60*time.Second, m1, m2)
	exactlyOnce(t, "consumer protocol", want, got)

	eventually(t, 30*time.Second, "both members assigned, disjoint", func() (bool, string) {
		p1, p2 := m1.partitions(), m2.partitions()
		seen := map[int32]int{}
		for _, p := range append(append([]int32{}, p1...), p2...) {
			seen[p]++
		}
		ok := len(p1) > 0 && len(p2) > 0 && len(seen) == parts
		for _, n := range seen {
			ok = ok && n == 1
		}
		return ok, "m1 " + fmtParts(p1) + " m2 " + fmtParts(p2)
	})
	g, err := describeConsumerGroup(m1.cl, group)
	if err != nil {
		t.Fatalf("ConsumerGroupDescribe: %v", err)
	}
	if g.ErrorCode != 0 || len(g.Members) != 2 || g.Epoch < 2 {
		t.Fatalf("ConsumerGroupDescribe: %+v", g)
	}
}

// describeConsumerGroup sends one ConsumerGroupDescribe for group on cl.
func describeConsumerGroup(cl *kgo.Client, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	return resp.Groups[0], nil
}

func fmtParts(ps []int32) string {
	s := "["
	for i, p := range ps {
		if i > 0 {
			s += ","
		}
		s += string(rune('0' + p%10))
	}
	return s + "]"
}

// TestConsumerProtocolClusterSmoke: two consumer-protocol members on a
// three-node cluster; the group's coordinator is SIGKILLed and the group
// continues at its successor at the same group epoch, each member keeping
// its partitions (the state was loaded from Queen, not rebuilt), and the
// records produced after the kill are all consumed.
func TestConsumerProtocolClusterSmoke(t *testing.T) {
	c := newTestCluster(t, clusterOpts{nodes: 3})
	const parts = 6
	topic, group := uniq("cp-cluster"), uniq("g-cp-cluster")
	c.createTopic(t, topic, parts)
	tg := c.target()
	opts := memberOpts{balancer: kgo.RangeBalancer(), extra: []kgo.Opt{kgo.ServerSideBalancer()}}
	m1 := startMember(t, tg, "m1", group, topic, opts)
	m2 := startMember(t, tg, "m2", group, topic, opts)
	want := produceRound(t, tg, topic, parts, 5, "r1", 0)
	exactlyOnce(t, "before the kill", want, collect(t, len(want), 60*time.Second, m1, m2))

	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		g, err := describeConsumerGroup(m1.cl, group)
		if err != nil {
			return kmsg.ConsumerGroupDescribeResponseGroup{ErrorCode: -1}
		}
		return g
	}
	var before kmsg.ConsumerGroupDescribeResponseGroup
	eventually(t, 30*time.Second, "the group stable with two members", func() (bool, string) {
		before = describe()
		return before.ErrorCode == 0 && before.State == "Stable" && len(before.Members) == 2, before.State
	})
	p1, p2 := fmtParts(m1.partitions()), fmtParts(m2.partitions())
	owner := c.agreedOwner(t, group, 1, 2, 3)
	if owner == 0 {
		t.Fatal("no agreed coordinator")
	}
	c.node(int(owner)).kill()
	var survivors []int
	for id := 1; id <= 3; id++ {
		if id != int(owner) {
			survivors = append(survivors, id)
		}
	}
	eventually(t, 30*time.Second, "a new coordinator", func() (bool, string) {
		o := c.agreedOwner(t, group, survivors...)
		return o != 0 && o != owner, fmt.Sprint(o)
	})
	want2 := produceRound(t, c.target(survivors...), topic, parts, 5, "r2", 5)
	eventually(t, 60*time.Second, "round 2 consumed", func() (bool, string) {
		seen := map[string]bool{}
		for _, r := range append(m1.records(), m2.records()...) {
			seen[string(r.value)] = true
		}
		n := 0
		for _, r := range want2 {
			if seen[string(r.value)] {
				n++
			}
		}
		return n == len(want2), fmt.Sprintf("%d of %d", n, len(want2))
	})
	after := describe()
	if after.ErrorCode != 0 || after.Epoch != before.Epoch || after.AssignmentEpoch != before.AssignmentEpoch {
		t.Fatalf("after the move: code %d epoch %d/%d, before %d/%d", after.ErrorCode, after.Epoch, after.AssignmentEpoch, before.Epoch, before.AssignmentEpoch)
	}
	if q1, q2 := fmtParts(m1.partitions()), fmtParts(m2.partitions()); q1 != p1 || q2 != p2 {
		t.Fatalf("assignment moved: m1 %s -> %s, m2 %s -> %s", p1, q1, p2, q2)
	}
}
