package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterBodies runs the very bodies TestSingleNode runs, unchanged,
// against three cluster-mode facades: clients bootstrap at all three and
// follow partition leaders and group coordinators wherever the ring puts
// them (issue 5: "the single-node e2e body also runs … unchanged").
func TestClusterBodies(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	runBodies(t, c.target())
}

// TestClusterTopicSeenEverywhere: a topic created through one node is at
// its declared width at every other node from their first answer about it,
// and served there; a widening through one node is what every node's next
// Metadata reports (seed 003 "Partitions and width": CreateTopics writes the
// width before it creates the queue, so on a cluster every node reports the
// declared width from its first answer; seed 002: the next Metadata reports
// an increase).
func TestClusterTopicSeenEverywhere(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	topic := uniq("everywhere")
	createTopic(t, c.target(1), topic, 3, nil)
	width := func(id int) (int, int16) {
		t.Helper()
		resp, err := c.metadata(t, id, topic)
		if err != nil {
			t.Fatalf("metadata at node %d: %v", id, err)
		}
		return len(resp.Topics[0].Partitions), resp.Topics[0].ErrorCode
	}
	for _, id := range []int{2, 3} {
		if n, code := width(id); n != 3 || code != 0 {
			t.Errorf("node %d right after CreateTopics at node 1: %d partitions, error %d; want 3, 0", id, n, code)
		}
	}
	// Produce pinned at node 2 (every node serves every partition).
	req := produceRaw(topic, 2, 5000, rawBatch(-1, -1, -1, "at node 2"))
	raw, err := c.pin(t, 2).Request(ctxT(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("produce at node 2: %v", err)
	}
	if p := raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Errorf("produce at node 2 right after CreateTopics at node 1: error %d base %d, want 0 / 0", p.ErrorCode, p.BaseOffset)
	}

	adm := newAdmin(t, c.addrs(1))
	if res, err := adm.CreatePartitions(ctxT(t, 10*time.Second), 2, topic); err != nil || res[topic].Err != nil {
		t.Fatalf("CreatePartitions +2 at node 1: %v %v", err, res[topic].Err)
	}
	start := time.Now()
	for _, id := range []int{2, 3} {
		if n, _ := width(id); n != 5 {
			t.Errorf("node %d right after CreatePartitions at node 1: %d partitions, want 5", id, n)
			eventually(t, 10*time.Second, fmt.Sprintf("node %d reports 5 partitions", id), func() (bool, string) {
				n, _ := width(id)
				return n == 5, fmt.Sprintf("%d partitions", n)
			})
			t.Logf("node %d caught up %.1fs after the widening", id, time.Since(start).Seconds())
		}
	}
}

// TestClusterKcatList is seed 003's "Run it on a cluster" check: produce
// through node 1 with kcat, list through node 2, and see three brokers at
// their own addresses, one controller, and every partition led by a live
// node with all three as replicas and in-sync replicas, leader first.
func TestClusterKcatList(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	topic := uniq("orders")
	runKcat(t, "customer-123:{\"orderId\":8891}\n", "-P", "-b", c.node(1).addr, "-t", topic, "-K:")
	out := runKcat(t, "", "-L", "-b", c.node(2).addr, "-t", topic)
	if !strings.Contains(out, "3 brokers:") {
		t.Errorf("kcat -L at node 2:\n%s\nwant 3 brokers", out)
	}
	controllers := 0
	for id := 1; id <= 3; id++ {
		line := fmt.Sprintf("broker %d at %s", id, c.node(id).addr)
		if !strings.Contains(out, line) {
			t.Errorf("kcat -L lacks %q:\n%s", line, out)
		}
		if strings.Contains(out, line+" (controller)") {
			controllers++
		}
	}
	if controllers != 1 {
		t.Errorf("kcat -L names %d controllers, want 1:\n%s", controllers, out)
	}
	re := regexp.MustCompile(`partition (\d+), leader (\d+), replicas: ([\d,]+), isrs: ([\d,]+)`)
	parts := re.FindAllStringSubmatch(out, -1)
	if len(parts) == 0 {
		t.Fatalf("kcat -L lists no partitions:\n%s", out)
	}
	for _, m := range parts {
		reps := strings.Split(m[3], ",")
		if len(reps) != 3 || reps[0] != m[2] || m[3] != m[4] {
			t.Errorf("partition %s: leader %s replicas %s isrs %s; want 3 replicas, leader first, isr = replicas", m[1], m[2], m[3], m[4])
		}
	}
}
