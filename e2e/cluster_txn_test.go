package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/hashring"
)

// Transactions in cluster mode (issue 9): franz-go's GroupTransactSession
// copies an input topic to an output topic exactly once on a three-node
// cluster, bootstrapped at a node that is not its transaction coordinator,
// while one node is killed with SIGKILL mid-stream.

// TestClusterTxnCoordinatorKilled: the transactional id's owner dies; the
// id moves to a survivor on the ring, which loads it from its qk:txn: row.
func TestClusterTxnCoordinatorKilled(t *testing.T) {
	clusterEOS(t, false, false, func(owner int32) int { return int(owner) })
}

// TestClusterTxnLibrdkafkaCoordinatorKilled: the same copy by librdkafka's
// consume-transform-produce loop (confluent-kafka-go, SendOffsetsToTransaction),
// bootstrapped away from the coordinator, which dies mid-stream: librdkafka
// finds the id's new owner (COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR
// are retriable) and the copy completes exactly once with no fatal error.
func TestClusterTxnLibrdkafkaCoordinatorKilled(t *testing.T) {
	clusterEOS(t, true, false, func(owner int32) int { return int(owner) })
}

// TestClusterTxnCoordinatorKVHangs: every KV call of the transactional id's
// owner hangs (queen-dev's fault injection, scoped to that node's token):
// its registry heartbeat stops, the survivors drop it after one TTL, and
// the id moves to one of them, which loads it from its row.
func TestClusterTxnCoordinatorKVHangs(t *testing.T) {
	clusterEOS(t, false, true, func(owner int32) int { return int(owner) })
}

// TestClusterTxnPartitionLeaderKilled: a node that leads partitions of
// both topics, but is neither the transaction coordinator nor the node the
// worker bootstrapped at, dies; its partitions move to the survivors.
func TestClusterTxnPartitionLeaderKilled(t *testing.T) {
	clusterEOS(t, false, false, func(owner int32) int {
		for _, id := range []int32{1, 2, 3} {
			if id != owner && id != eosBootstrap(owner) {
				return int(id)
			}
		}
		panic("three nodes")
	})
}

// eosBootstrap is the node the worker starts from: not the coordinator.
func eosBootstrap(owner int32) int32 { return owner%3 + 1 }

// clusterEOS runs the copy (by librdkafka's loop if rdkafka, else franz-go's), kills victim(coordinator) once 300 records are
// committed (or, hang, makes every KV call of it hang), and checks the output holds every input record exactly once,
// in order, and that no poll of the group's committed offsets ever saw one
// go backwards.
func clusterEOS(t *testing.T, rdkafka, hang bool, victim func(owner int32) int) {
	c := newTestCluster(t, clusterOpts{nodes: 3, env: map[string]string{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000"}})
	const parts, n = 6, 1200
	in, out := uniq("ceos-in"), uniq("ceos-out")
	c.createTopic(t, in, parts)
	c.createTopic(t, out, parts)

	ring := hashring.New([]int32{1, 2, 3})
	txnID := ""
	for i := 0; txnID == ""; i++ {
		id := uniq("tid-ceos") + "-" + strconv.Itoa(i)
		if o, _ := ring.Owner(id); o == 1 {
			txnID = id
		}
	}
	owner := int32(1)
	boot := eosBootstrap(owner)
	kill := victim(owner)
	var live []int
	for id := 1; id <= 3; id++ {
		if id != kill {
			live = append(live, id)
		}
	}
	seeds := c.addrs(live...)

	input, want := eosInput(in, parts, n)
	prod := newKgo(t, c.addrs(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, prod.ProduceSync(ctxT(t, 60*time.Second), input...).FirstErr())
	prod.Close()
	inEnds := endOffsets(t, seeds, in)
	require.Equal(t, int64(n), sumOffsets(inEnds))

	w := eosWorker{name: "cw", bootstrap: c.node(int(boot)).addr, in: in, out: out, group: uniq("g-ceos"), txnID: txnID, rdkafka: rdkafka}
	worker := startEOSWorker(t, w)

	// Committed offsets, polled at a surviving node all along.
	var (
		mu        sync.Mutex
		last      = map[int32]int64{}
		backwards []string
		stop      = make(chan struct{})
		polled    = make(chan struct{})
	)
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			got, err := c.offsetsAt(t, live[0], w.group, in, parts)
			if err != nil {
				continue
			}
			mu.Lock()
			for p, o := range got {
				if o < last[p] {
					backwards = append(backwards, fmt.Sprintf("%s[%d] %d after %d", in, p, o, last[p]))
				}
				if o > last[p] {
					last[p] = o
				}
			}
			mu.Unlock()
		}
	}()

	line, err := worker.WaitLine(func(l string) bool {
		_, after, ok := strings.Cut(l, "committed ")
		k, _ := strconv.Atoi(strings.TrimSpace(after))
		return ok && k >= 300
	}, 90*time.Second)
	require.NoError(t, err, "the worker commits through the cluster")
	if hang {
		c.dev.fault(t, map[string]any{"rules": []faultRule{{Route: "kv", Token: c.tokens[kill-1], Hang: true}}})
		t.Cleanup(func() { c.dev.clearFaults(t) })
	} else {
		c.node(kill).kill()
	}
	t.Logf("KV hang %v (else SIGKILL) of node %d (transaction coordinator %d, worker bootstrapped at %d) at %q", hang, kill, owner, boot, line)

	// Done when the group has committed the whole input (OffsetFetch is
	// answered at any node, from Queen); each commit carries its records.
	eventually(t, 150*time.Second, "committed offsets "+fmt.Sprint(inEnds), func() (bool, string) {
		got, err := c.offsetsAt(t, live[0], w.group, in, parts)
		if err != nil {
			return false, err.Error()
		}
		return fmt.Sprint(got) == fmt.Sprint(inEnds), fmt.Sprintf("got %v", got)
	})
	close(stop)
	<-polled
	require.True(t, worker.Running(), "the worker exited: %v", worker.ExitErr())
	if kill == int(owner) {
		// The id moved: a survivor names another owner (the same ring for
		// either key type).
		fc, err := c.findCoordinator(t, live[0], txnID)
		require.NoError(t, err)
		require.NotEqual(t, owner, fc.NodeID, "the transactional id's owner after node %d stopped answering", kill)
	}
	worker.Kill()
	// What the worker met on the way (retries, aborts), for the log.
	for _, l := range strings.Split(worker.Out.From(0), "\n") {
		if strings.HasPrefix(l, "eos "+w.name+":") && !strings.Contains(l, "committed") {
			t.Log(l)
		}
	}

	mu.Lock()
	assert.Empty(t, backwards, "committed offsets went backwards")
	mu.Unlock()
	assertCopiedOnce(t, seeds, out, inEnds, want, n)
}
