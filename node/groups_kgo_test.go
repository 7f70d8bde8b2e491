package node

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/queen/dev"
)

// TestKgoConsumerGroupCommitsAndResumesAfterRestart drives the group APIs
// through a served node with franz-go: two group members split four
// partitions and commit; after they leave the group is Empty and listed;
// after a facade restart a new member resumes exactly at the committed
// offsets (only the records produced since arrive); an admin DeleteGroups
// (kadm's request, newAdmin) deletes the group.
func TestKgoConsumerGroupCommitsAndResumesAfterRestart(t *testing.T) {
	addr, env := fixedAddrEnv(t, map[string]string{"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS": "0"})
	e := newDataEnv(t, dev.Options{}, env)
	serveTestNode(t, e.n)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	produce := func(perPartition int) {
		prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("billing-in"))
		require.NoError(t, err)
		defer prod.Close()
		for p := int32(0); p < 4; p++ {
			for i := 0; i < perPartition; i++ {
				require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(fmt.Sprint(p, "-", i))}).FirstErr())
			}
		}
	}
	produce(10)

	type seen struct {
		mu  sync.Mutex
		got map[string]int64 // value -> offset
	}
	consume := func(s *seen, want int, members int) {
		var wg sync.WaitGroup
		for m := 0; m < members; m++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("billing-in"),
					kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond))
				require.NoError(t, err)
				defer cl.Close() // LeaveGroup
				for ctx.Err() == nil {
					pctx, pc := context.WithTimeout(ctx, 300*time.Millisecond)
					fs := cl.PollFetches(pctx)
					pc()
					for _, r := range fs.Records() {
						s.mu.Lock()
						s.got[string(r.Value)] = r.Offset
						s.mu.Unlock()
					}
					require.NoError(t, cl.CommitUncommittedOffsets(ctx))
					s.mu.Lock()
					done := len(s.got) >= want
					s.mu.Unlock()
					if done {
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	first := &seen{got: map[string]int64{}}
	consume(first, 40, 2)
	require.Len(t, first.got, 40)

	admCl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	adm := newAdmin(admCl)
	offsets, err := adm.FetchOffsets(ctx, "billing")
	require.NoError(t, err)
	for p := int32(0); p < 4; p++ {
		o, ok := offsets.Lookup("billing-in", p)
		require.True(t, ok, "partition %d committed", p)
		require.Equal(t, int64(10), o.At, "partition %d", p)
	}
	described, err := adm.DescribeGroups(ctx, "billing")
	require.NoError(t, err)
	require.Equal(t, "Empty", described["billing"].State, "both members left")
	listed, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	require.Contains(t, listed.Groups(), "billing")
	admCl.Close()

	// A facade restart is a broker restart: a new process over the same
	// Queen resumes the group at its committed offsets.
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	require.NoError(t, e.n.Shutdown(sctx))
	scancel()
	n2 := e.node(env)
	serveTestNode(t, n2)
	produce(5)
	second := &seen{got: map[string]int64{}}
	consume(second, 20, 1)
	require.Len(t, second.got, 20)
	for v, off := range second.got {
		require.GreaterOrEqual(t, off, int64(10), "record %s at offset %d was already committed", v, off)
	}

	admCl, err = kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer admCl.Close()
	adm = newAdmin(admCl)
	del, err := adm.DeleteGroups(ctx, "billing")
	require.NoError(t, err)
	require.NoError(t, del["billing"].Err)
	offsets, err = adm.FetchOffsets(ctx, "billing")
	require.NoError(t, err)
	_, ok := offsets.Lookup("billing-in", 0)
	require.False(t, ok, "offsets gone after DeleteGroups")
}
