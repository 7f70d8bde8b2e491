package e2e

import (
	"context"
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, m1.cl)
	if err != nil {
		t.Fatalf("ConsumerGroupDescribe: %v", err)
	}
	if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 2 || g.Epoch < 2 {
		t.Fatalf("ConsumerGroupDescribe: %+v", g)
	}
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
