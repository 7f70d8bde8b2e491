package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Cluster timing of the suite: the fastest the configuration allows, so a
// failover is about three seconds and a membership change half of one.
const (
	clusterTTL       = 3 * time.Second
	clusterHeartbeat = 500 * time.Millisecond
)

// clusterOpts shape a test cluster.
type clusterOpts struct {
	nodes   int
	proxies bool                           // a queenProxy between each facade and queen-dev
	env     map[string]string              // extra facade variables, for every node
	nodeEnv func(id int) map[string]string // and for node id alone (nil: none)
	bin     string                         // the facade binary ("": this tree's build)
	dev     *queenDev                      // the queen-dev to share (nil: one of its own)
}

// testCluster is one queen-dev and n facades with node ids 1..n, each with a
// QUEEN_TOKEN of its own (queen-dev runs without auth, so every token is the
// one default tenant, and a fault rule can still single one node out).
type testCluster struct {
	dev     *queenDev
	nodes   []*facade     // nodes[i] is node id i+1
	proxies []*queenProxy // nil without opts.proxies
	tokens  []string

	tb    testing.TB // the test that started the cluster and owns its clients
	pinMu sync.Mutex
	pins  map[string]*kgo.Broker // one pinned client per address, reused by every poll
}

func (c *testCluster) node(id int) *facade { return c.nodes[id-1] }

// close kills every process of the cluster now rather than at the end of
// the test that started it.
func (c *testCluster) close() {
	for _, f := range c.nodes {
		f.kill()
	}
	c.dev.kill()
}

// addrs is every node's address, ids ascending.
func (c *testCluster) addrs(ids ...int) []string {
	if len(ids) == 0 {
		for i := range c.nodes {
			ids = append(ids, i+1)
		}
	}
	var out []string
	for _, id := range ids {
		out = append(out, c.node(id).addr)
	}
	return out
}

// target is the cluster as a client sees it through nodes ids (all when
// none are named).
func (c *testCluster) target(ids ...int) target {
	return target{bootstrap: c.addrs(ids...), dev: c.dev}
}

// nodeEnv is node id's environment: the suite timing, its own token and
// node id, then the options' extras.
func nodeEnv(id int, token string, extra map[string]string) map[string]string {
	env := map[string]string{
		"QUEEN_KAFKA_NODE_ID":              strconv.Itoa(id),
		"QUEEN_TOKEN":                      token,
		"QUEEN_KAFKA_CLUSTER_TTL_MS":       strconv.Itoa(int(clusterTTL.Milliseconds())),
		"QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS": strconv.Itoa(int(clusterHeartbeat.Milliseconds())),
		"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS":  "0",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// newTestCluster starts queen-dev and the nodes, and returns once every node
// lists every node as a broker.
func newTestCluster(t testing.TB, o clusterOpts) *testCluster {
	t.Helper()
	requireBin(t, queenKafkBin)
	c := &testCluster{dev: o.dev, tb: t}
	if c.dev == nil {
		c.dev = startQueenDev(t, devOptions{faults: true})
	}
	bin := cmp.Or(o.bin, queenKafkBin)
	run := uniq("qk")
	for id := 1; id <= o.nodes; id++ {
		token := fmt.Sprintf("node-%d-%s", id, run)
		upstream := c.dev.url
		if o.proxies {
			p := startQueenProxy(t, c.dev.url)
			c.proxies = append(c.proxies, p)
			upstream = p.url
		}
		env := nodeEnv(id, token, o.env)
		if o.nodeEnv != nil {
			maps.Copy(env, o.nodeEnv(id))
		}
		f := newFacadeOf(bin, upstream, freePort(t), env)
		f.Name = fmt.Sprintf("node-%d@%s", id, f.addr)
		t.Cleanup(f.kill)
		if err := f.start(); err != nil {
			t.Fatalf("%v\n%s", err, f.Out.From(0))
		}
		f.attachLogs(t)
		c.nodes = append(c.nodes, f)
		c.tokens = append(c.tokens, token)
	}
	all := make([]int32, o.nodes)
	for i := range all {
		all[i] = int32(i + 1)
	}
	for id := 1; id <= o.nodes; id++ {
		c.waitBrokers(t, id, all, 10*time.Second)
	}
	return c
}

// pin is a franz-go broker handle that sends every request to node id
// itself, never to whichever broker a client would pick. It redials on its
// own after the node restarts.
func (c *testCluster) pin(t testing.TB, id int) *kgo.Broker {
	t.Helper()
	addr := c.node(id).addr
	c.pinMu.Lock()
	defer c.pinMu.Unlock()
	if b, ok := c.pins[addr]; ok {
		return b
	}
	if c.pins == nil {
		c.pins = map[string]*kgo.Broker{}
	}
	// Owned by the cluster's test, not the (sub)test asking first, so the
	// cached client outlives a subtest.
	b := newKgo(c.tb, []string{addr}, kgo.RetryTimeout(2*time.Second)).SeedBrokers()[0]
	c.pins[addr] = b
	return b
}

// brokerIDs asks node id for Metadata and returns the broker ids it lists.
func (c *testCluster) brokerIDs(t testing.TB, id int) ([]int32, error) {
	t.Helper()
	resp, err := c.metadata(t, id)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

func (c *testCluster) metadata(t testing.TB, id int, topics ...string) (*kmsg.MetadataResponse, error) {
	t.Helper()
	req := metadataReq(topics...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	raw, err := c.pin(t, id).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return raw.(*kmsg.MetadataResponse), nil
}

// waitBrokers waits until node id lists exactly want.
func (c *testCluster) waitBrokers(t testing.TB, id int, want []int32, limit time.Duration) {
	t.Helper()
	eventually(t, limit, fmt.Sprintf("node %d lists brokers %v", id, want), func() (bool, string) {
		got, err := c.brokerIDs(t, id)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(got, want), fmt.Sprintf("lists %v", got)
	})
}

// createTopic creates topic through the cluster and waits until every node
// serves it: a node learns of a topic created at another one on its next
// catalogue refresh (at most 3 s), as it learns of a queue created natively.
func (c *testCluster) createTopic(t testing.TB, topic string, parts int32) {
	t.Helper()
	createTopic(t, c.target(), topic, parts, nil)
	for id := 1; id <= len(c.nodes); id++ {
		eventually(t, 10*time.Second, fmt.Sprintf("node %d serves topic %s", id, topic), func() (bool, string) {
			resp, err := c.metadata(t, id, topic)
			if err != nil {
				return false, err.Error()
			}
			tp := resp.Topics[0]
			return tp.ErrorCode == 0 && len(tp.Partitions) == int(parts), fmt.Sprintf("error %d, %d partitions", tp.ErrorCode, len(tp.Partitions))
		})
	}
}

// findCoordinator asks node id who coordinates group. The request names
// the key in both forms (v0-v3's key, v4+'s batch of one), as a
// broker-pinned request goes at whichever version is negotiated, and a
// batched answer is copied into the top-level fields callers read.
func (c *testCluster) findCoordinator(t testing.TB, id int, group string) (*kmsg.FindCoordinatorResponse, error) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	raw, err := c.pin(t, id).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) == 1 {
		a := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = a.ErrorCode, a.ErrorMessage, a.NodeID, a.Host, a.Port
	}
	return resp, nil
}

// offsetsAt reads group's committed offsets of topic from node id itself
// (OffsetFetch is answered by every node). A partition without a commit is
// absent. The request carries both forms, one group (v0-v7) and a group
// list (v8+), as a broker-pinned request is sent at whichever version the
// client negotiates.
func (c *testCluster) offsetsAt(t testing.TB, id int, group, topic string, parts int32) (map[int32]int64, error) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic = topic
	for p := range parts {
		rt.Partitions = append(rt.Partitions, p)
		gt.Partitions = append(gt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group, rg.Topics = group, []kmsg.OffsetFetchRequestGroupTopic{gt}
	req.Groups = append(req.Groups, rg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	raw, err := c.pin(t, id).Request(ctx, byNameOffsetFetch{req})
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.OffsetFetchResponse)
	type answer struct {
		partition int32
		offset    int64
		code      int16
	}
	code, answers := resp.ErrorCode, []answer(nil)
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			answers = append(answers, answer{p.Partition, p.Offset, p.ErrorCode})
		}
	}
	for _, g := range resp.Groups {
		code = g.ErrorCode
		for _, tp := range g.Topics {
			for _, p := range tp.Partitions {
				answers = append(answers, answer{p.Partition, p.Offset, p.ErrorCode})
			}
		}
	}
	if code != 0 {
		return nil, fmt.Errorf("OffsetFetch at node %d: error %d", id, code)
	}
	out := map[int32]int64{}
	for _, a := range answers {
		if a.code != 0 {
			return nil, fmt.Errorf("OffsetFetch at node %d partition %d: error %d", id, a.partition, a.code)
		}
		if a.offset >= 0 {
			out[a.partition] = a.offset
		}
	}
	return out, nil
}

// commitAt sends an assign()-style commit (generation -1, no member) of
// topic/partition at offset to node id and returns its error code.
func (c *testCluster) commitAt(t testing.TB, id int, group, topic string, partition int32, offset int64) (int16, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	raw, err := c.pin(t, id).Request(ctx, commitReq(group, topic, partition, offset))
	if err != nil {
		return 0, err
	}
	return raw.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil
}

// agreedOwner is the coordinator every listed node names for group without
// error, or 0 while they disagree or any refuses.
func (c *testCluster) agreedOwner(t testing.TB, group string, ids ...int) int32 {
	t.Helper()
	owner := int32(-1)
	for _, id := range ids {
		fc, err := c.findCoordinator(t, id, group)
		if err != nil || fc.ErrorCode != 0 {
			return 0
		}
		if owner != -1 && fc.NodeID != owner {
			return 0
		}
		owner = fc.NodeID
	}
	return owner
}

// logLine waits for a line of f's output after offset off containing every
// one of want, and returns it.
func logLine(t testing.TB, f *facade, off int, limit time.Duration, want ...string) string {
	t.Helper()
	var line string
	eventually(t, limit, fmt.Sprintf("%s logs %q", f.Name, want), func() (bool, string) {
		for _, l := range strings.Split(f.Out.From(off), "\n") {
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(l, w)
			}
			if ok {
				line = l
				return true, ""
			}
		}
		return false, "not yet"
	})
	return line
}

// ackLog collects what a producer had acknowledged, by partition.
type ackLog struct {
	mu   sync.Mutex
	recs []rec
	errs int
}

func (a *ackLog) add(r *kgo.Record, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		a.errs++
		return
	}
	a.recs = append(a.recs, fromKgo(r))
}

func (a *ackLog) snapshot() []rec {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.recs)
}
