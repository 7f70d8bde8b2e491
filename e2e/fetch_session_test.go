package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/hashring"
)

// partConsumer is a franz-go consumer of a topic's partitions (no group),
// polling in the background; franz-go fetches with KIP-227 sessions unless
// told not to.
type partConsumer struct {
	cl   *kgo.Client
	mu   sync.Mutex
	got  []rec
	done chan struct{}
}

func startPartConsumer(t testing.TB, seeds []string, topic string, parts int32, opts ...kgo.Opt) *partConsumer {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < parts; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	c := &partConsumer{done: make(chan struct{})}
	c.cl = newKgo(t, seeds, append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets})}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fs := c.cl.PollFetches(ctx)
			c.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { c.got = append(c.got, fromKgo(r)) })
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

func (c *partConsumer) records() []rec {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]rec(nil), c.got...)
}

// waitFor waits until the consumer holds n records and returns them.
func (c *partConsumer) waitFor(t testing.TB, n int, limit time.Duration) []rec {
	t.Helper()
	eventually(t, limit, fmt.Sprintf("%d records consumed", n), func() (bool, string) {
		got := c.records()
		return len(got) >= n, fmt.Sprintf("%d records", len(got))
	})
	time.Sleep(300 * time.Millisecond) // a duplicate arriving late is caught by the exactness check
	return c.records()
}

// opsCluster is a 3-node cluster whose nodes serve their operator listener
// (metrics) at ops[id].
func opsCluster(t *testing.T) (*testCluster, map[int]string) {
	t.Helper()
	ops := map[int]string{}
	for id := 1; id <= 3; id++ {
		ops[id] = "127.0.0.1:" + strconv.Itoa(freePort(t))
	}
	c := newTestCluster(t, clusterOpts{nodes: 3, nodeEnv: func(id int) map[string]string {
		return map[string]string{"QUEEN_KAFKA_HTTP_ADDR": ops[id]}
	}})
	return c, ops
}

// sessionState is one node's fetch session metrics.
type sessionState struct {
	sessions, partitions, incremental float64
}

func sessionsAt(t testing.TB, ops string) sessionState {
	t.Helper()
	s := scrape(t, "http://"+ops)
	return sessionState{
		sessions:    metric(t, s, "queen_kafka_fetch_sessions"),
		partitions:  metric(t, s, "queen_kafka_fetch_session_partitions"),
		incremental: metric(t, s, "queen_kafka_fetch_session_fetches_total", "kind", "incremental"),
	}
}

// TestClusterFetchSessions: a franz-go consumer of 12 partitions across 3
// nodes fetches each node's leaders over a session of that node's own (a
// session lives on the node that created it), every record once. When node
// 3 stops, its partitions' leadership moves to nodes 1 and 2 and the
// consumer's sessions there take them in; when node 3 is back and leads
// them again, the sessions on 1 and 2 no longer hold them: no node's
// session keeps a partition it no longer leads. (franz-go moves partitions
// by restarting its sessions, a full fetch at epoch 0 that closes the old
// session; forgotten partitions are TestKgoPausedPartitionIsForgotten's.)
// Nothing is lost or read twice across the moves. A session holds no data:
// every fetch reads Queen, and every node serves every partition, so even
// a stale client fetching from a former leader is answered correctly.
func TestClusterFetchSessions(t *testing.T) {
	t.Parallel()
	c, ops := opsCluster(t)
	const parts = 12
	// ledBy is how many partitions of topic each node leads with nodes live.
	ledBy := func(topic string, nodes ...int32) map[int]float64 {
		ring := hashring.New(nodes)
		out := map[int]float64{}
		for p := int32(0); p < parts; p++ {
			l, _ := ring.Leader(topic, p)
			out[int(l)]++
		}
		return out
	}
	// A topic every node leads some of, three nodes live or two: a node
	// leading none is fetched no more, so its session is never fetched
	// again to drop what it held (it waits for eviction, as in Kafka),
	// which is not what this test watches. About 1 name in 40 is skipped.
	topic := uniq("fsess")
	for len(ledBy(topic, 1, 2, 3)) < 3 || len(ledBy(topic, 1, 2)) < 2 {
		topic = uniq("fsess")
	}
	led := func(nodes ...int32) map[int]float64 { return ledBy(topic, nodes...) }
	c.createTopic(t, topic, parts)
	cons := startPartConsumer(t, c.addrs(), topic, parts, kgo.MetadataMaxAge(time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	// sessionsFollow waits until each live node holds one session with
	// exactly the partitions it leads, and it is fetched incrementally.
	sessionsFollow := func(what string, live ...int32) {
		t.Helper()
		want := led(live...)
		base := map[int]float64{}
		for _, id := range live {
			base[int(id)] = sessionsAt(t, ops[int(id)]).incremental
		}
		eventually(t, 30*time.Second, what, func() (bool, string) {
			ok, msg := true, ""
			for _, id := range live {
				st := sessionsAt(t, ops[int(id)])
				msg += fmt.Sprintf(" node %d: %v sessions, %v partitions (leads %v), %v incremental;", id, st.sessions, st.partitions, want[int(id)], st.incremental-base[int(id)])
				if want[int(id)] > 0 && (st.sessions != 1 || st.partitions != want[int(id)] || st.incremental <= base[int(id)]) {
					ok = false
				}
				if want[int(id)] == 0 && st.partitions != 0 {
					ok = false
				}
			}
			return ok, msg
		})
	}

	r1 := produceRound(t, c.target(), topic, parts, 3, "r1", 0)
	exactlyOnce(t, "three nodes", r1, cons.waitFor(t, len(r1), 30*time.Second))
	sessionsFollow("one session per node with its leaders", 1, 2, 3)

	sigtermDrop(t, c, 3)
	r2 := produceRound(t, c.target(1, 2), topic, parts, 2, "r2", 3)
	exactlyOnce(t, "node 3 stopped", append(append([]rec{}, r1...), r2...), cons.waitFor(t, len(r1)+len(r2), 30*time.Second))
	sessionsFollow("nodes 1 and 2 took node 3's partitions into their sessions", 1, 2)

	rejoin(t, c, 3)
	r3 := produceRound(t, c.target(), topic, parts, 2, "r3", 5)
	all := append(append(append([]rec{}, r1...), r2...), r3...)
	exactlyOnce(t, "node 3 back", all, cons.waitFor(t, len(all), 30*time.Second))
	sessionsFollow("node 3 leads its partitions again; 1 and 2 forgot them", 1, 2, 3)
	if !c.node(3).running() {
		t.Fatal("node 3 stopped")
	}
}

// TestClusterWideFetchSessions: the watched path (package fetchwatch) on 3
// nodes. A franz-go consumer of 3,600 partitions holds a session on each
// node of the partitions it leads, about 1,200 each: wider than one Queen
// call, so each node keeps the session's partitions parked at Queen
// between fetches. Records written to partitions led by every node are
// each consumed once; when node 3 stops, nodes 1 and 2 take its partitions
// into their sessions (and parked reads), and when it is back it takes
// them again; the records written across both moves are each consumed
// once.
func TestClusterWideFetchSessions(t *testing.T) {
	t.Parallel()
	c, ops := opsCluster(t)
	const parts = 3600
	topic := uniq("fwide")
	c.createTopic(t, topic, parts)
	cons := startPartConsumer(t, c.addrs(), topic, parts, kgo.MetadataMaxAge(time.Second), kgo.FetchMaxWait(5*time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))

	// round writes one record to every 45th partition (80 of them, led by
	// every node), at offset off.
	var all []rec
	round := func(tg target, name string, off int64) {
		t.Helper()
		var rs []rec
		for p := int32(0); p < parts; p += 45 {
			rs = append(rs, rec{partition: p, offset: off, key: []byte(strconv.Itoa(int(p))), value: []byte(fmt.Sprintf("%s-%d", name, p))})
		}
		produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), rs)
		all = append(all, rs...)
		exactlyOnce(t, name, all, cons.waitFor(t, len(all), 60*time.Second))
	}
	// parkedOn waits until each node named keeps parked reads for its wide
	// session.
	parkedOn := func(what string, ids ...int) {
		t.Helper()
		eventually(t, 60*time.Second, what, func() (bool, string) {
			ok, msg := true, ""
			for _, id := range ids {
				s := scrape(t, "http://"+ops[id])
				n := metric(t, s, "queen_kafka_fetch_parked_reads")
				msg += fmt.Sprintf(" node %d: %v parked, %v partitions in sessions;", id, n, metric(t, s, "queen_kafka_fetch_session_partitions"))
				ok = ok && n > 0
			}
			return ok, msg
		})
	}

	parkedOn("every node parks its session's partitions", 1, 2, 3)
	round(c.target(), "r1", 0)

	sigtermDrop(t, c, 3)
	round(c.target(1, 2), "r2", 1)
	parkedOn("nodes 1 and 2 park node 3's partitions too", 1, 2)

	rejoin(t, c, 3)
	parkedOn("node 3 parks its partitions again", 3)
	round(c.target(), "r3", 2)
}
