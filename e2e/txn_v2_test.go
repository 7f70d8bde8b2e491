package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-890 (issue 23) with franz-go 1.22, which speaks transaction protocol
// 2 whenever a broker finalizes transaction.version 2: the transactional
// ETL of franz-go's TestTxnEtl (a transactional producer committing every
// few hundred records with EndAndBeginTransaction, then consume-transform-
// produce chains per group balancer, non-static), once with v2 negotiated
// and once with the node refusing it (QUEEN_KAFKA_TRANSACTION_VERSION=1,
// the old protocol). Which protocol ran is read back from the epochs:
// protocol 2 bumps the producer's epoch at every commit.
func TestTxnEtlTransactionVersions(t *testing.T) {
	for _, c := range []struct {
		name string
		tv   string
		v2   bool
	}{{"v2", "2", true}, {"v1", "1", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dev, _ := sharedEnv(t)
			fac := startFacade(t, dev, map[string]string{"QUEEN_KAFKA_TRANSACTION_VERSION": c.tv,
				"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "1000", "QUEEN_KAFKA_GROUP_JOIN_DELAY_MS": "0"})
			seeds := []string{fac.addr}
			tg := target{seeds, dev}
			const parts, n, perTxn = 6, 3000, 500
			src := uniq("etl-src")
			createTopic(t, tg, src, parts, nil)

			prodID := uniq("etl-p")
			etlProduce(t, seeds, prodID, src, n, perTxn)
			srcEnds := endOffsets(t, seeds, src)
			require.Equal(t, int64(n), sumOffsets(srcEnds), "each committed transaction of N advances the log by N")

			adm := newAdmin(t, seeds)
			d, err := adm.DescribeTransactions(ctxT(t, 10*time.Second), prodID)
			require.NoError(t, err)
			txns := int16(n / perTxn)
			if c.v2 {
				require.GreaterOrEqual(t, d[prodID].ProducerEpoch, txns, "protocol 2: one epoch per commit")
			} else {
				require.Equal(t, int16(0), d[prodID].ProducerEpoch, "the old protocol keeps the epoch")
			}
			require.Equal(t, "CompleteCommit", d[prodID].State)

			for _, b := range []struct {
				name     string
				balancer kgo.GroupBalancer
			}{{"range", kgo.RangeBalancer()}, {"cooperative-sticky", kgo.CooperativeStickyBalancer()}} {
				t.Run(b.name, func(t *testing.T) {
					dst, group := uniq("etl-dst"), uniq("etl-g")
					createTopic(t, tg, dst, parts, nil)
					commits := etlChain(t, tg, b.balancer, group, src, dst, srcEnds)
					got := map[string]int{}
					for _, r := range readToEnd(t, seeds, dst, kgo.ReadCommitted()) {
						got[string(r.Key)]++
					}
					require.Len(t, got, n, "every input record in the output")
					for k, cnt := range got {
						require.Equal(t, 1, cnt, "key %s copied %d times", k, cnt)
					}
					require.Equal(t, int64(n), sumOffsets(endOffsets(t, seeds, dst)), "no aborted or duplicate record in the log")
					total := 0
					for id, n := range commits {
						total += n
						d, err := adm.DescribeTransactions(ctxT(t, 10*time.Second), id)
						require.NoError(t, err)
						if c.v2 {
							require.GreaterOrEqual(t, int(d[id].ProducerEpoch), n, "worker %s: protocol 2 bumps at every commit", id)
						} else {
							require.Equal(t, int16(0), d[id].ProducerEpoch, "worker %s", id)
						}
					}
					require.Positive(t, total)
				})
			}
		})
	}
}

// etlProduce is TestTxnEtl's producer: n keyed records to topic in
// transactions of perTxn, ended and begun again with EndAndBeginTransaction
// (safe and unsafe by turns), every record's offset rising per partition.
func etlProduce(t *testing.T, seeds []string, id, topic string, n, perTxn int) {
	t.Helper()
	cl := newKgo(t, seeds, kgo.TransactionalID(id), kgo.TransactionTimeout(2*time.Minute), kgo.MaxBufferedRecords(10000))
	ctx := ctxT(t, 2*time.Minute)
	var mu sync.Mutex
	last := map[int32]int{}
	require.NoError(t, cl.BeginTransaction())
	unsafe := false
	for i := range n {
		if i > 0 && i%perTxn == 0 {
			how := kgo.EndBeginTxnSafe
			if unsafe {
				how = kgo.EndBeginTxnUnsafe
			}
			unsafe = !unsafe
			require.NoError(t, cl.EndAndBeginTransaction(ctx, how, kgo.TryCommit, func(_ context.Context, err error) error { return err }))
		}
		key := []byte(strconv.Itoa(i))
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: key, Value: key}, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %s: %v", key, err)
				return
			}
			if !bytes.Equal(r.Key, key) {
				t.Errorf("out of order key %s, want %s", r.Key, key)
			}
			// TestTxnEtl also checks each partition's offsets rise; a
			// transactional batch is answered offset -1 here (records take
			// their offsets at the commit, the seed's deviation), so the
			// order is checked by partition as the callbacks come.
			mu.Lock()
			defer mu.Unlock()
			if r.Offset != -1 {
				t.Errorf("a staged record answered offset %d", r.Offset)
			}
			if prev, ok := last[r.Partition]; ok && prev >= i {
				t.Errorf("partition %d: record %d acknowledged after %d", r.Partition, i, prev)
			}
			last[r.Partition] = i
		})
	}
	require.NoError(t, cl.Flush(ctx))
	require.NoError(t, cl.EndTransaction(ctx, kgo.TryCommit))
}

// etlChain copies src into dst with GroupTransactSession workers of one
// group using balancer: the first quits after a few transactions and a
// third joins then, so the group rebalances under open transactions. It
// returns once the group committed srcEnds, with the transactions each
// worker (by transactional id) committed.
func etlChain(t *testing.T, tg target, balancer kgo.GroupBalancer, group, src, dst string, srcEnds map[int32]int64) map[string]int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	commits := map[string]int{}
	start := func(maxTxns int) {
		id := uniq("etl-w")
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := etlWorker(ctx, tg.bootstrap, balancer, id, group, src, dst, maxTxns)
			if err != nil {
				t.Errorf("worker %s: %v", id, err)
			}
			mu.Lock()
			commits[id] = n
			mu.Unlock()
		}()
	}
	start(3)
	start(0)
	time.Sleep(2 * time.Second)
	start(0)
	waitCommitted(t, tg, group, src, srcEnds, 2*time.Minute)
	cancel()
	wg.Wait()
	return commits
}

// etlWorker is one consume-transform-produce worker: each poll copied in a
// transaction, committed with its offsets; after maxTxns commits (0: until
// ctx ends) it leaves, and returns how many it committed.
func etlWorker(ctx context.Context, seeds []string, balancer kgo.GroupBalancer, id, group, src, dst string, maxTxns int) (done int, err error) {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(seeds...), kgo.TransactionalID(id), kgo.TransactionTimeout(60*time.Second),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(src), kgo.Balancers(balancer),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond), kgo.RebalanceTimeout(10*time.Second),
		kgo.FetchMaxWait(250*time.Millisecond), kgo.MetadataMinAge(250*time.Millisecond),
	)
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	for ctx.Err() == nil && (maxTxns == 0 || done < maxTxns) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := sess.PollRecords(pctx, 200)
		cancel()
		var ferr error
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("fetch %s[%d]: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return done, ferr
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return done, fmt.Errorf("begin: %w", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Topic: dst, Key: r.Key, Value: r.Value}, nil)
		})
		committed, err := sess.End(context.Background(), kgo.TryCommit)
		if err != nil {
			return done, fmt.Errorf("end: %w", err)
		}
		if committed {
			done++
		}
	}
	return done, nil
}

// kadm's ListTransactions, DescribeTransactions and DescribeProducers
// through each node of a three-node cluster, and the same requests pinned
// to each node, name the one open transaction a franz-go producer staged
// through the partitions' leaders, whichever node coordinates it.
func TestClusterTxnAdminAtEachNode(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3})
	const parts = 6
	topic := uniq("adm")
	c.createTopic(t, topic, parts)
	id := uniq("adm-tx")
	cl := newTxnKgo(t, c.addrs(), id)
	require.NoError(t, cl.BeginTransaction())
	for p := range int32(parts) {
		txnValues(t, cl, topic, p, fmt.Sprintf("v-%d", p))
	}
	require.NoError(t, cl.Flush(ctxT(t, 10*time.Second)))
	fcr := kmsg.NewPtrFindCoordinatorRequest()
	fcr.CoordinatorType, fcr.CoordinatorKeys = 1, []string{id}
	fc, err := fcr.RequestWith(ctxT(t, 5*time.Second), c.pin(t, 1))
	require.NoError(t, err)
	require.Len(t, fc.Coordinators, 1)
	owner := fc.Coordinators[0].NodeID
	md, err := c.metadata(t, 1, topic)
	require.NoError(t, err)
	leaders := map[int32]int32{}
	elsewhere := 0
	for _, p := range md.Topics[0].Partitions {
		leaders[p.Partition] = p.Leader
		if p.Leader != owner {
			elsewhere++
		}
	}
	require.Positive(t, elsewhere, "records staged through a node that is not the coordinator")

	var pid int64 = -1
	for node := 1; node <= 3; node++ {
		adm := kadm.NewClient(newKgo(t, c.addrs(node)))
		ctx := ctxT(t, 20*time.Second)
		l, err := adm.ListTransactions(ctx, nil, nil)
		require.NoError(t, err, "node %d", node)
		require.Contains(t, l, id, "node %d", node)
		require.Equal(t, "Ongoing", l[id].State, "node %d", node)
		if pid < 0 {
			pid = l[id].ProducerID
		}
		require.Equal(t, pid, l[id].ProducerID)

		d, err := adm.DescribeTransactions(ctx, id)
		require.NoError(t, err, "node %d", node)
		require.NoError(t, d[id].Err)
		require.Equal(t, "Ongoing", d[id].State, "node %d", node)
		require.Equal(t, pid, d[id].ProducerID)
		require.Positive(t, d[id].StartTimestamp)
		require.Len(t, d[id].Topics[topic], parts, "node %d: every partition staged", node)

		dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: nil})
		require.NoError(t, err, "node %d", node)
		for p := range int32(parts) {
			dpp := dp[topic].Partitions[p]
			require.NoError(t, dpp.Err, "node %d partition %d", node, p)
			require.Equal(t, leaders[p], dpp.Leader, "answered by the partition's leader")
			require.Contains(t, dpp.ActiveProducers, pid, "node %d partition %d", node, p)
			require.Equal(t, int32(0), dpp.ActiveProducers[pid].LastSequence)
		}

		// The same requests pinned to this very node.
		b := c.pin(t, node)
		lr := kmsg.NewPtrListTransactionsRequest()
		resp, err := lr.RequestWith(ctx, b)
		require.NoError(t, err)
		found := false
		for _, s := range resp.TransactionStates {
			found = found || s.TransactionalID == id && s.TransactionState == "Ongoing" && s.ProducerID == pid
		}
		require.True(t, found, "node %d itself lists the transaction", node)
		dr := kmsg.NewPtrDescribeTransactionsRequest()
		dr.TransactionalIDs = []string{id}
		dresp, err := dr.RequestWith(ctx, b)
		require.NoError(t, err)
		require.Equal(t, "Ongoing", dresp.TransactionStates[0].State, "node %d itself describes it", node)
	}
	require.NoError(t, cl.EndTransaction(ctxT(t, 10*time.Second), kgo.TryCommit))
	adm := kadm.NewClient(newKgo(t, c.addrs(2)))
	d, err := adm.DescribeTransactions(ctxT(t, 10*time.Second), id)
	require.NoError(t, err)
	require.Equal(t, "CompleteCommit", d[id].State)
}
