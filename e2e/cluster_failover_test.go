package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/hashring"
)

// failoverResult is one SIGKILL of a group's coordinator, measured.
type failoverResult struct {
	newOwner   int32
	agreed     time.Duration // kill → both survivors name the same new owner
	committing time.Duration // kill → the group's first commit through a survivor
	acked      int           // records the producer had acknowledged
	duplicates int           // records the consumer saw more than once
}

// runFailover starts a three-node cluster, runs a producer and a group
// consumer through the survivors-to-be, SIGKILLs the group's coordinator
// (node 3) mid-stream and measures how long until the survivors agree on
// a new owner and the group commits through it. It fails t on any lost
// acknowledged record, any committed offset going backwards, or any
// duplicate below what was committed when the coordinator died.
func runFailover(t testing.TB) failoverResult {
	t.Helper()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	defer c.close() // a benchmark runs several of these under one b
	const parts = 6
	topic := uniq("failover")
	survivors := c.target(1, 2)
	c.createTopic(t, topic, parts)
	group := ownedGroup(t, []int32{1, 2, 3}, 3)

	// Committed offsets as node 1 reads them, every 100 ms for the whole
	// run; any step backwards is recorded.
	var (
		monMu      sync.Mutex
		latest     = map[int32]int64{}
		regression []string
	)
	monCtx, monStop := context.WithCancel(context.Background())
	monDone := make(chan struct{})
	go func() {
		defer close(monDone)
		for monCtx.Err() == nil {
			if got, err := c.offsetsAt(t, 1, group, topic, parts); err == nil {
				monMu.Lock()
				for p, o := range got {
					if prev, ok := latest[p]; ok && o < prev {
						regression = append(regression, fmt.Sprintf("partition %d: %d after %d", p, o, prev))
					}
					latest[p] = o
				}
				monMu.Unlock()
			}
			select {
			case <-monCtx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { monStop(); <-monDone }()
	committed := func() map[int32]int64 {
		monMu.Lock()
		defer monMu.Unlock()
		out := make(map[int32]int64, len(latest))
		for p, o := range latest {
			out[p] = o
		}
		return out
	}

	// A steady producer through the survivors: one record every 10 ms.
	acks := &ackLog{}
	prod := newKgo(t, survivors.bootstrap, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RetryTimeout(60*time.Second), kgo.ProducerLinger(0))
	prodStop := make(chan struct{})
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		for i := 0; ; i++ {
			select {
			case <-prodStop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			prod.Produce(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, "v-%d", i)}, acks.add)
		}
	}()
	stopProducer := func() {
		select {
		case <-prodStop:
			return
		default:
		}
		close(prodStop)
		<-prodDone
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := prod.Flush(ctx); err != nil {
			t.Errorf("producer flush: %v", err)
		}
	}
	defer stopProducer()

	m := startMember(t, survivors, "m", group, topic, memberOpts{extra: []kgo.Opt{kgo.RetryTimeout(60 * time.Second)}})
	defer m.close()
	eventually(t, 30*time.Second, "the group consuming and committing before the kill", func() (bool, string) {
		n := len(committed())
		return len(m.records()) >= 50 && n > 0, fmt.Sprintf("%d records, %d partitions committed", len(m.records()), n)
	})

	c.node(3).kill()
	killed := time.Now()
	var atKill map[int32]int64
	eventually(t, 5*time.Second, "committed offsets right after the kill", func() (bool, string) {
		got, err := c.offsetsAt(t, 1, group, topic, parts)
		if err != nil {
			return false, err.Error()
		}
		atKill = got
		return true, ""
	})

	var r failoverResult
	eventually(t, 30*time.Second, "the group committing through a survivor", func() (bool, string) {
		if r.agreed == 0 {
			if o := c.agreedOwner(t, group, 1, 2); o != 0 && o != 3 {
				r.agreed, r.newOwner = time.Since(killed), o
			}
		}
		for p, o := range committed() {
			if prev, ok := atKill[p]; !ok || o > prev {
				r.committing = time.Since(killed)
				return r.agreed != 0, fmt.Sprintf("committing, survivors agreed=%v", r.agreed != 0)
			}
		}
		return false, "no commit since the kill"
	})
	if want, _ := hashring.New([]int32{1, 2}).Owner(group); r.newOwner != want {
		t.Errorf("survivors agreed on node %d, the ring over {1,2} names %d", r.newOwner, want)
	}

	// Let the group run on the new owner, then drain.
	time.Sleep(time.Second)
	stopProducer()
	acked := acks.snapshot()
	r.acked = len(acked)
	eventually(t, 30*time.Second, "every acknowledged record consumed", func() (bool, string) {
		seen := map[string]bool{}
		for _, g := range m.records() {
			seen[fmt.Sprintf("%d@%d", g.partition, g.offset)] = true
		}
		missing := 0
		for _, a := range acked {
			if !seen[fmt.Sprintf("%d@%d", a.partition, a.offset)] {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d acknowledged records not consumed", missing, len(acked))
	})
	counts := map[string]int{}
	for _, g := range m.records() {
		k := fmt.Sprintf("%d@%d", g.partition, g.offset)
		counts[k]++
		if counts[k] == 2 {
			r.duplicates++
			if g.offset < atKill[g.partition] {
				t.Errorf("record %s redelivered although offset %d was committed when the coordinator died", k, atKill[g.partition])
			}
		}
	}
	monStop()
	<-monDone
	monMu.Lock()
	for _, reg := range regression {
		t.Errorf("committed offset went backwards: %s", reg)
	}
	monMu.Unlock()
	if acks.errs > 0 {
		t.Logf("%d produce attempts failed (not acknowledged, so not counted)", acks.errs)
	}
	return r
}
