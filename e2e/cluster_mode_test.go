package e2e

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/hashring"
)

// ownedGroup is a fresh group id that the rendezvous ring over live assigns
// to owner, so a test chooses its coordinator instead of discovering it.
func ownedGroup(t testing.TB, live []int32, owner int32) string {
	t.Helper()
	r := hashring.New(live)
	for range 10_000 {
		g := uniq("g")
		if o, _ := r.Owner(g); o == owner {
			return g
		}
	}
	t.Fatalf("no group owned by %d among %v", owner, live)
	return ""
}

// TestClusterAgreesAndFormsOneGroup: every node reports the same brokers
// (each at its own address), controller, cluster id, leaders and replicas;
// two consumers of one group bootstrapped at different nodes form ONE
// group with disjoint, covering assignments, and their commits read back
// from every node.
func TestClusterAgreesAndFormsOneGroup(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	const parts = 6
	topic := uniq("agree")
	c.createTopic(t, topic, parts)
	ring := hashring.New([]int32{1, 2, 3})

	var first string
	for id := 1; id <= 3; id++ {
		resp, err := c.metadata(t, id, topic)
		if err != nil {
			t.Fatalf("metadata at node %d: %v", id, err)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "controller=%d cluster=%s brokers=", resp.ControllerID, strp(resp.ClusterID))
		for i, br := range resp.Brokers {
			if want := c.node(i + 1).addr; br.NodeID != int32(i+1) || fmt.Sprintf("%s:%d", br.Host, br.Port) != want {
				t.Errorf("node %d lists broker %d as %d at %s:%d, want %d at %s", id, i, br.NodeID, br.Host, br.Port, i+1, want)
			}
			fmt.Fprintf(&b, "%d@%s:%d,", br.NodeID, br.Host, br.Port)
		}
		if resp.ControllerID != 1 || strp(resp.ClusterID) != `"queen"` {
			t.Errorf("node %d: controller %d cluster %s, want 1 and queen", id, resp.ControllerID, strp(resp.ClusterID))
		}
		if tp := resp.Topics[0]; tp.ErrorCode != 0 || len(tp.Partitions) != parts {
			t.Fatalf("node %d: topic %s error %v, %d partitions", id, topic, kerr.ErrorForCode(tp.ErrorCode), len(tp.Partitions))
		}
		for _, p := range resp.Topics[0].Partitions {
			leader, _ := ring.Leader(topic, p.Partition)
			if p.Leader != leader || !slices.Equal(p.Replicas, ring.Replicas(topic, p.Partition)) || !slices.Equal(p.ISR, p.Replicas) {
				t.Errorf("node %d partition %d: leader %d replicas %v isr %v, want leader %d replicas %v",
					id, p.Partition, p.Leader, p.Replicas, p.ISR, leader, ring.Replicas(topic, p.Partition))
			}
			fmt.Fprintf(&b, " p%d=%d%v", p.Partition, p.Leader, p.Replicas)
		}
		if first == "" {
			first = b.String()
		} else if b.String() != first {
			t.Errorf("node %d disagrees with node 1:\n%s\n%s", id, b.String(), first)
		}
	}

	group := uniq("g-one")
	m1 := startMember(t, c.target(1), "m1", group, topic, memberOpts{})
	m3 := startMember(t, c.target(3), "m3", group, topic, memberOpts{})
	assigned := waitStable(t, c.target(), group, topic, 2, parts)
	for member, ps := range assigned {
		if len(ps) == 0 {
			t.Errorf("member %s holds no partition: %v", member, assigned)
		}
	}
	rs := produceRound(t, c.target(), topic, parts, 3, "r1", 0)
	exactlyOnce(t, "one group across nodes", rs, collect(t, len(rs), 30*time.Second, m1, m3))
	for id := 1; id <= 3; id++ {
		eventually(t, 10*time.Second, fmt.Sprintf("commits read back from node %d", id), func() (bool, string) {
			got, err := c.offsetsAt(t, id, group, topic, parts)
			if err != nil {
				return false, err.Error()
			}
			return fmt.Sprint(got) == fmt.Sprint(fill(parts, 3)), fmt.Sprint(got)
		})
	}
}

// TestClusterCoordinatorKill: SIGKILL of a group's coordinator under
// continuous produce and consume. The group commits again through a
// survivor, no acknowledged record is lost, committed offsets never go
// backwards, and every duplicate is a record that was not yet committed
// when the coordinator died.
func TestClusterCoordinatorKill(t *testing.T) {
	t.Parallel()
	r := runFailover(t)
	t.Logf("failover after SIGKILL (TTL %v, heartbeat %v, join delay 0): survivors agreed on node %d after %.2fs, group committing again after %.2fs; %d records acknowledged, %d redelivered",
		clusterTTL, clusterHeartbeat, r.newOwner, r.agreed.Seconds(), r.committing.Seconds(), r.acked, r.duplicates)
}

// TestClusterStopRestartAndConflict: SIGTERM hands the id back, so peers
// drop the node within about a heartbeat rather than a TTL; a restart with
// the same id after a SIGKILL (its row still live) waits the row out and
// then serves; a second live process with a live id exits 1 naming the
// evidence.
func TestClusterStopRestartAndConflict(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})

	dropped := sigtermDrop(t, c, 3)
	t.Logf("SIGTERM: peers dropped node 3 after %.3fs (heartbeat %v, TTL %v)", dropped.Seconds(), clusterHeartbeat, clusterTTL)
	if dropped >= clusterTTL-clusterHeartbeat {
		t.Errorf("peers dropped the stopped node after %v: that is the TTL backstop, not the hand-back", dropped)
	}

	n3 := c.node(3)
	off := n3.Out.Len()
	if err := n3.restart(); err != nil {
		t.Fatalf("restart after SIGTERM: %v", err)
	}
	logLine(t, n3, off, 10*time.Second, "node id claimed")
	c.waitBrokers(t, 1, []int32{1, 2, 3}, 10*time.Second)

	// SIGKILL leaves the row live for up to one TTL: the replacement waits.
	n3.kill()
	off = n3.Out.Len()
	if err := n3.restart(); err != nil {
		t.Fatalf("restart after SIGKILL: %v", err)
	}
	logLine(t, n3, off, 10*time.Second, "node id is held by an existing registry row")
	claimed := logLine(t, n3, off, 10*time.Second, "node id claimed")
	m := regexp.MustCompile(`waited=(\S+)`).FindStringSubmatch(claimed)
	waited, err := time.ParseDuration(strings.Trim(m[1], `"`))
	if err != nil || waited < clusterHeartbeat {
		t.Errorf("restart inside the TTL: %q, want a wait for the predecessor's row", claimed)
	}
	t.Logf("restart inside the TTL waited %v before adopting the id", waited)
	for id := 1; id <= 3; id++ {
		c.waitBrokers(t, id, []int32{1, 2, 3}, 10*time.Second)
	}
	if _, err := c.metadata(t, 3); err != nil {
		t.Fatalf("restarted node 3 does not serve: %v", err)
	}

	// A second process claiming the live id 3 on another port.
	env := facadeEnv(c.dev.url, "127.0.0.1:"+fmt.Sprint(freePort(t)), nodeEnv(3, c.tokens[2], nil))
	out, code := runFacadeToExit(t, env, 15*time.Second, "a second process with live node id 3 kept running")
	if code != 1 {
		t.Errorf("second process with a live id exited %d, want 1", code)
	}
	for _, want := range []string{"node id 3 is held by another live facade", "moved from version", "QUEEN_KAFKA_NODE_ID"} {
		if !strings.Contains(out, want) {
			t.Errorf("conflict output lacks %q:\n%s", want, out)
		}
	}
	if !n3.running() {
		t.Error("the live holder of id 3 stopped because a second process tried its id")
	}
}

// rejoin restarts node id (stopped) and waits until it has claimed its id
// and every node lists all three.
func rejoin(t testing.TB, c *testCluster, id int) {
	t.Helper()
	n := c.node(id)
	off := n.Out.Len()
	if err := n.restart(); err != nil {
		t.Fatalf("restart node %d: %v", id, err)
	}
	logLine(t, n, off, 10*time.Second, "node id claimed")
	for i := 1; i <= len(c.nodes); i++ {
		c.waitBrokers(t, i, []int32{1, 2, 3}, 10*time.Second)
	}
}

// sigtermDrop stops node id with SIGTERM and returns how long it took until
// every other node stopped listing it.
func sigtermDrop(t testing.TB, c *testCluster, id int) time.Duration {
	t.Helper()
	var rest []int32
	for i := range c.nodes {
		if i+1 != id {
			rest = append(rest, int32(i+1))
		}
	}
	start := time.Now()
	if !c.node(id).signal(syscall.SIGTERM, 10*time.Second) {
		t.Fatalf("node %d ignored SIGTERM", id)
	}
	for _, other := range rest {
		c.waitBrokers(t, int(other), rest, 2*clusterTTL)
	}
	return time.Since(start)
}

// TestClusterKVCut: one node's KV calls fail (queen-dev fault rule on its
// token). It keeps serving produce and fetch, its group RPCs answer
// COORDINATOR_NOT_AVAILABLE while FindCoordinator names a peer, and it
// answers them again once KV returns.
func TestClusterKVCut(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	topic := uniq("cut")
	c.createTopic(t, topic, 2)
	group := ownedGroup(t, []int32{1, 2, 3}, 2)
	br := c.pin(t, 2)
	ctx := ctxT(t, 60*time.Second)

	c.dev.fault(t, map[string]any{"rules": []faultRule{{Route: "kv", Token: c.tokens[1], Status: 503}}})
	t.Cleanup(func() { c.dev.clearFaults(t) })

	// Set aside, node 2 sends FindCoordinator to the group's owner among
	// its peers, which drop it once its row expires.
	peer, _ := hashring.New([]int32{1, 3}).Owner(group)
	eventually(t, 5*time.Second, "node 2 names a peer in FindCoordinator while its KV is cut", func() (bool, string) {
		fc, err := c.findCoordinator(t, 2, group)
		if err != nil {
			return false, err.Error()
		}
		return fc.ErrorCode == 0 && fc.NodeID == peer, fmt.Sprintf("%v, node %d", kerr.ErrorForCode(fc.ErrorCode), fc.NodeID)
	})

	// Produce and fetch through node 2 itself.
	raw, err := br.Request(ctx, produceRaw(topic, 0, 10_000, rawBatch(-1, -1, -1, "during-the-cut")))
	if err != nil {
		t.Fatalf("produce at node 2: %v", err)
	}
	if p := raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
		t.Fatalf("produce at node 2 during the KV cut: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	raw, err = br.Request(ctx, fetchP0(topic, 0, 0))
	if err != nil {
		t.Fatalf("fetch at node 2: %v", err)
	}
	if p := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || !bytes.Contains(p.RecordBatches, []byte("during-the-cut")) {
		t.Fatalf("fetch at node 2 during the KV cut: %v, %d bytes without the record", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
	}

	jreq := kmsg.NewPtrJoinGroupRequest()
	jreq.Version = 3
	jreq.Group, jreq.ProtocolType = group, "consumer"
	jreq.SessionTimeoutMillis, jreq.RebalanceTimeoutMillis = 10_000, 10_000
	jreq.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	raw, err = br.Request(ctx, jreq)
	if err != nil {
		t.Fatalf("join at node 2: %v", err)
	}
	if code := raw.(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("JoinGroup at node 2 during the KV cut: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
	if code, err := c.commitAt(t, 2, group, topic, 0, 1); err != nil || code != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("OffsetCommit at node 2 during the KV cut: %v %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(code), err)
	}

	c.dev.clearFaults(t)
	eventually(t, 10*time.Second, "node 2 coordinates its group again after KV returned", func() (bool, string) {
		fc, err := c.findCoordinator(t, 2, group)
		if err != nil {
			return false, err.Error()
		}
		return fc.ErrorCode == 0 && fc.NodeID == 2, fmt.Sprintf("%v, node %d", kerr.ErrorForCode(fc.ErrorCode), fc.NodeID)
	})
	eventually(t, 10*time.Second, "a commit at node 2 after recovery", func() (bool, string) {
		code, err := c.commitAt(t, 2, group, topic, 0, 1)
		if err != nil {
			return false, err.Error()
		}
		return code == 0, fmt.Sprint(kerr.ErrorForCode(code))
	})
	for id := 1; id <= 3; id++ {
		if got, err := c.offsetsAt(t, id, group, topic, 2); err != nil || got[0] != 1 {
			t.Errorf("offsets at node %d after recovery: %v %v", id, got, err)
		}
	}
}

// TestClusterStaleOwnerCannotRegressOffset is seed 000's "commit of 16 on
// top of a commit of 50", made to happen. Node 2 coordinates the group and
// has committed 10. Its next commit (16) passes its ownership check and is
// then held between node 2 and Queen, and so are node 2's heartbeats, so
// its row expires and the others drop it. The successor takes the group
// over and commits 50. Only then does node 2's commit reach Queen: the
// fence refuses it (node 2 answers NOT_COORDINATOR) and 50 stays, as every
// node reads it.
func TestClusterStaleOwnerCannotRegressOffset(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3, proxies: true})
	topic := uniq("stale")
	c.createTopic(t, topic, 1)
	group := ownedGroup(t, []int32{1, 2, 3}, 2)
	successor, _ := hashring.New([]int32{1, 3}).Owner(group)

	if code, err := c.commitAt(t, 2, group, topic, 0, 10); err != nil || code != 0 {
		t.Fatalf("commit 10 at the owner: %v %v", kerr.ErrorForCode(code), err)
	}

	proxy := c.proxies[1]
	proxy.holdKV(func(b []byte) bool { return bytes.Contains(b, []byte("qk:fence:")) })
	type result struct {
		code int16
		err  error
	}
	stale := make(chan result, 1)
	go func() {
		code, err := c.commitAt(t, 2, group, topic, 0, 16)
		stale <- result{code, err}
	}()
	select {
	case <-proxy.held:
	case r := <-stale:
		t.Fatalf("node 2's commit of 16 was answered (%v %v) instead of reaching Queen", kerr.ErrorForCode(r.code), r.err)
	case <-time.After(5 * time.Second):
		t.Fatal("node 2's commit of 16 never reached its KV call")
	}
	// Node 2 goes silent towards Queen without noticing anything yet.
	proxy.holdKV(func([]byte) bool { return true })
	c.waitBrokers(t, 1, []int32{1, 3}, 3*clusterTTL)
	c.waitBrokers(t, 3, []int32{1, 3}, 3*clusterTTL)
	eventually(t, 5*time.Second, fmt.Sprintf("nodes 1 and 3 agree node %d owns the group", successor), func() (bool, string) {
		o := c.agreedOwner(t, group, 1, 3)
		return o == successor, fmt.Sprintf("owner %d", o)
	})
	if code, err := c.commitAt(t, int(successor), group, topic, 0, 50); err != nil || code != 0 {
		t.Fatalf("commit 50 at the successor: %v %v", kerr.ErrorForCode(code), err)
	}

	proxy.releaseAll()
	select {
	case r := <-stale:
		if r.err != nil || r.code != kerr.NotCoordinator.Code {
			t.Errorf("the stale owner's commit of 16 was answered %v %v, want NOT_COORDINATOR", kerr.ErrorForCode(r.code), r.err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the stale commit was never answered")
	}
	for id := 1; id <= 3; id++ {
		eventually(t, 10*time.Second, fmt.Sprintf("offset 50 at node %d", id), func() (bool, string) {
			got, err := c.offsetsAt(t, id, group, topic, 1)
			if err != nil {
				return false, err.Error()
			}
			return got[0] == 50, fmt.Sprint(got)
		})
	}
	// Node 2 comes back once it reaches Queen again.
	c.waitBrokers(t, 1, []int32{1, 2, 3}, 3*clusterTTL)
}

// TestClusterLostIDStopsTheProcess: node 3 loses touch with Queen for
// longer than the TTL, so its row expires and a second process claims id 3.
// When node 3 reaches Queen again its heartbeat finds the row written by
// another incarnation: it must stop, exit 1 and say why, because two
// brokers answering as one id split every group that id coordinates. The
// new holder keeps serving and the peers list it at its own address.
func TestClusterLostIDStopsTheProcess(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3, proxies: true})
	old := c.node(3)
	off := old.Out.Len()

	c.proxies[2].holdKV(func([]byte) bool { return true })
	c.waitBrokers(t, 1, []int32{1, 2}, 3*clusterTTL)

	// The replacement talks to queen-dev directly, at an address of its own.
	repl := newFacade(c.dev.url, freePort(t), nodeEnv(3, c.tokens[2], nil))
	repl.Name = "node-3-replacement@" + repl.addr
	t.Cleanup(repl.kill)
	if err := repl.start(); err != nil {
		t.Fatalf("%v\n%s", err, repl.Out.From(0))
	}
	repl.attachLogs(t)
	logLine(t, repl, 0, 10*time.Second, "node id claimed")

	c.proxies[2].releaseAll()
	select {
	case <-old.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the node whose id was taken kept running")
	}
	if code := old.exited(); code != 1 {
		t.Errorf("the node whose id was taken exited %d, want 1", code)
	}
	logLine(t, old, off, time.Second, "this node id was taken by another facade process", repl.addr)
	if !repl.running() {
		t.Fatal("the new holder of id 3 stopped")
	}
	eventually(t, 10*time.Second, "node 1 lists node 3 at the replacement's address", func() (bool, string) {
		resp, err := c.metadata(t, 1)
		if err != nil {
			return false, err.Error()
		}
		for _, b := range resp.Brokers {
			if b.NodeID == 3 {
				return fmt.Sprintf("%s:%d", b.Host, b.Port) == repl.addr, fmt.Sprintf("node 3 at %s:%d", b.Host, b.Port)
			}
		}
		return false, "node 3 not listed"
	})
}

// TestClusterStopWhileJoining: a node that cannot reach the registry at
// boot keeps retrying the claim (it never serves without knowing the
// cluster), and a SIGTERM during that wait stops it at once, cleanly.
func TestClusterStopWhileJoining(t *testing.T) {
	t.Parallel()
	requireBin(t, queenKafkBin)
	f := newFacade("http://127.0.0.1:"+fmt.Sprint(freePort(t)), freePort(t), nodeEnv(1, "unreachable-token", nil))
	t.Cleanup(f.kill)
	if err := f.start(); err != nil {
		t.Fatalf("%v\n%s", err, f.Out.From(0))
	}
	f.attachLogs(t)
	logLine(t, f, 0, 10*time.Second, "registry unreachable at boot")
	if !f.running() {
		t.Fatal("a node that cannot reach the registry at boot exited instead of retrying")
	}
	if code := f.terminate(t, 5*time.Second); code != 0 {
		t.Errorf("stop during the claim exited %d, want 0", code)
	}
	logLine(t, f, 0, time.Second, "stopped while joining the cluster")
}
